DROP INDEX accounts_name_key;
ALTER TABLE accounts DROP COLUMN name_key;
