ALTER TABLE accounts
    DROP CONSTRAINT IF EXISTS accounts_previous_token_expires,
    DROP COLUMN IF EXISTS previous_token_expires_at,
    DROP COLUMN IF EXISTS previous_token_hash;
