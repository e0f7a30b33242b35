DROP TABLE IF EXISTS log_key_heads;
DROP TABLE IF EXISTS log_key_ranges;
DROP TABLE IF EXISTS account_key_events;
DROP TABLE IF EXISTS account_keys;
ALTER TABLE accounts DROP COLUMN IF EXISTS key_seq;
ALTER TABLE accounts DROP COLUMN IF EXISTS active_keys;
