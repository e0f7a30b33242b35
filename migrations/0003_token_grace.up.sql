-- A rotated token stays valid for a grace period, or until the new one is first used, so that a
-- rotation whose answer was lost does not lock the account out.
ALTER TABLE accounts
    ADD COLUMN previous_token_hash bytea UNIQUE CHECK (length(previous_token_hash) = 32),
    ADD COLUMN previous_token_expires_at bigint,
    ADD CONSTRAINT accounts_previous_token_expires CHECK ((previous_token_hash IS NULL) = (previous_token_expires_at IS NULL));
