-- Players' keys (issue 31): the Ed25519 public keys that sign a player's actions, and each
-- account's key log, a hash chain of its key changes whose events are leaves of the transparency
-- log, so that a key the player did not add (an operator's) is there for the player to see.

-- The length of each account's key log (0: the account never had a key) and the number of its
-- keys not retired, kept equal to the count of its account_keys rows without retired_seq by
-- every key change, in the same transaction: the write path reads them with the account, to
-- know whether an action must be signed. The accounts trigger (0015) does not name them: a key
-- change tells no replica's token cache anything.
ALTER TABLE accounts ADD COLUMN active_keys integer NOT NULL DEFAULT 0 CHECK (active_keys >= 0);
ALTER TABLE accounts ADD COLUMN key_seq bigint NOT NULL DEFAULT 0 CHECK (key_seq >= 0);

-- Every key an account ever had. A public key belongs to at most one account, ever (a key
-- retired is not bound again). added_seq and retired_seq are the key events that added and
-- retired it; recovery marks a key the operator added (keys_recovered), not the player's own.
CREATE TABLE account_keys (
    key_id      text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
    account_id  uuid NOT NULL REFERENCES accounts (id),
    public_key  bytea NOT NULL UNIQUE CHECK (length(public_key) = 32),
    added_seq   bigint NOT NULL CHECK (added_seq >= 1),
    added_at    bigint NOT NULL,
    recovery    boolean NOT NULL DEFAULT false,
    retired_seq bigint CHECK (retired_seq > added_seq),
    retired_at  bigint CHECK (retired_at >= added_at),
    CHECK ((retired_seq IS NULL) = (retired_at IS NULL))
);

-- An account's active keys, for the signature checks and the last-key rule.
CREATE INDEX account_keys_active ON account_keys (account_id) WHERE retired_seq IS NULL;
-- An account's keys, for GET /v1/accounts/{id}/keys.
CREATE INDEX account_keys_account ON account_keys (account_id, added_seq);

-- Each account's key log, stored as a lobby's events are (0001, 0011): the exact canonical data
-- the hash covers, the chain's links checked by the database, and the writing transaction's id
-- for the log's integrator.
CREATE TABLE account_key_events (
    account_id uuid NOT NULL REFERENCES accounts (id),
    seq        bigint NOT NULL CHECK (seq >= 1),
    prev_seq   bigint GENERATED ALWAYS AS (NULLIF(seq - 1, 0)) STORED,
    type       text NOT NULL CHECK (type IN ('key_added', 'key_retired', 'keys_recovered')),
    at         bigint NOT NULL,
    -- json, not jsonb: the exact canonical bytes the hash was computed over.
    data       json NOT NULL,
    prev_hash  bytea NOT NULL CHECK (length(prev_hash) = 32),
    hash       bytea NOT NULL CHECK (length(hash) = 32),
    log_xid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
    PRIMARY KEY (account_id, seq),
    UNIQUE (account_id, seq, hash),
    FOREIGN KEY (account_id, prev_seq, prev_hash) REFERENCES account_key_events (account_id, seq, hash),
    CHECK (seq > 1 OR prev_hash = decode(repeat('00', 32), 'hex'))
);
CREATE INDEX account_key_events_log_xid ON account_key_events (log_xid, account_id);

-- Where key events sit in the transparency log, as log_ranges and log_heads (0011) hold the
-- lobbies' events: leaf first_index + i is key event first_seq + i of the account.
CREATE TABLE log_key_ranges (
    first_index bigint PRIMARY KEY CHECK (first_index >= 0),
    account_id  uuid NOT NULL,
    first_seq   bigint NOT NULL CHECK (first_seq >= 1),
    count       bigint NOT NULL CHECK (count >= 1)
);
CREATE UNIQUE INDEX log_key_ranges_account ON log_key_ranges (account_id, first_seq);

-- Each account's newest logged key event and its leaf.
CREATE TABLE log_key_heads (
    account_id uuid PRIMARY KEY,
    seq        bigint NOT NULL CHECK (seq >= 1),
    leaf_index bigint NOT NULL CHECK (leaf_index >= 0)
);
