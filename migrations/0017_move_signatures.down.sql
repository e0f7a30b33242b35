ALTER TABLE round_moves DROP COLUMN IF EXISTS reveal_signature;
ALTER TABLE round_moves DROP COLUMN IF EXISTS commit_signature;
