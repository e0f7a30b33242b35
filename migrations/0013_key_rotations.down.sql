ALTER TABLE signing_keys DROP COLUMN rotation;
