-- The server's Ed25519 keys that sign chain heads. The newest key without retired_at signs; keys
-- are never deleted, so heads signed with a rotated key stay checkable.
CREATE TABLE signing_keys (
    id          text PRIMARY KEY,
    public_key  bytea NOT NULL UNIQUE CHECK (length(public_key) = 32),
    -- The private key's 32-byte seed. It never leaves this table except to sign.
    seed        bytea NOT NULL CHECK (length(seed) = 32),
    created_at  bigint NOT NULL,
    retired_at  bigint CHECK (retired_at IS NULL OR retired_at >= created_at)
);

-- At most one current key.
CREATE UNIQUE INDEX signing_keys_current ON signing_keys ((true)) WHERE retired_at IS NULL;
