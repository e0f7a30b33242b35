-- The tournament's state, its money and its event log. Times are Unix milliseconds (bigint), as
-- in package tournament; ids are UUIDs. Constraints hold whatever the code does, so a bug shows
-- as a failed statement rather than as corrupt state.

CREATE TABLE accounts (
    id         uuid PRIMARY KEY,
    name       text NOT NULL CHECK (name <> ''),
    role       text NOT NULL CHECK (role IN ('player', 'admin')),
    -- sha256 of the bearer token; the token itself is never stored. NULL: no token.
    token_hash bytea UNIQUE CHECK (length(token_hash) = 32),
    balance    bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    CONSTRAINT accounts_player_balance_nonnegative CHECK (role <> 'player' OR balance >= 0)
);

-- Rulesets by content hash: a game names the exact rules it is played under.
CREATE TABLE rulesets (
    hash      text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    id        text NOT NULL,
    canonical bytea NOT NULL
);

CREATE TABLE lobbies (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    closed      boolean NOT NULL DEFAULT false,
    config      jsonb NOT NULL,
    next_config jsonb,
    -- The latest game (set once the first game is inserted, in the lobby's creating transaction).
    game_id     uuid,
    games       integer NOT NULL DEFAULT 0 CHECK (games >= 0),
    created_at  bigint NOT NULL,
    -- Head of the lobby's event chain, advanced under the lobby's row lock.
    last_seq    bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    last_hash   bytea CHECK (length(last_hash) = 32),
    CHECK ((last_seq = 0) = (last_hash IS NULL))
);

CREATE TABLE games (
    id               uuid PRIMARY KEY,
    lobby_id         uuid NOT NULL REFERENCES lobbies (id),
    number           integer NOT NULL CHECK (number >= 1),
    config           jsonb NOT NULL,
    ruleset_hash     text NOT NULL REFERENCES rulesets (hash),
    stage            text NOT NULL CHECK (stage IN ('registration', 'moves', 'reveal', 'finished', 'stopped')),
    round            integer NOT NULL CHECK (round >= 0),
    -- 0 when the stage has no window (an empty registration, an ended game).
    stage_started_at bigint NOT NULL,
    deadline         bigint NOT NULL,
    extensions       integer NOT NULL CHECK (extensions >= 0),
    joined           integer NOT NULL CHECK (joined >= 0),
    players          integer NOT NULL CHECK (players >= 0 AND players <= joined),
    active           integer NOT NULL CHECK (active >= 0 AND active <= players),
    committed        integer NOT NULL CHECK (committed >= 0),
    revealed         integer NOT NULL CHECK (revealed >= 0),
    escrow           bigint NOT NULL CHECK (escrow >= 0),
    winner           uuid REFERENCES accounts (id),
    payout           bigint NOT NULL CHECK (payout >= 0),
    stop_reason      text NOT NULL,
    created_at       bigint NOT NULL,
    ended_at         bigint NOT NULL,
    UNIQUE (lobby_id, number),
    CHECK (stage IN ('registration', 'moves', 'reveal') OR (escrow = 0 AND deadline = 0)),
    CHECK (stage <> 'registration' OR round = 0),
    CHECK (stage NOT IN ('moves', 'reveal') OR round >= 1),
    CHECK (deadline = 0 OR deadline > stage_started_at)
);

-- The clock worker's question, "which open stage is due first", is one index probe.
CREATE INDEX games_open_deadline ON games (deadline)
    WHERE stage IN ('registration', 'moves', 'reveal') AND deadline > 0;

ALTER TABLE lobbies ADD FOREIGN KEY (game_id) REFERENCES games (id);

CREATE TABLE game_players (
    game_id          uuid NOT NULL REFERENCES games (id),
    account_id       uuid NOT NULL REFERENCES accounts (id),
    ord              integer NOT NULL CHECK (ord >= 1),
    registered_at    bigint NOT NULL,
    active           boolean NOT NULL,
    eliminated_round integer NOT NULL DEFAULT 0 CHECK (eliminated_round >= 0),
    PRIMARY KEY (game_id, account_id),
    UNIQUE (game_id, ord),
    CHECK (active = (eliminated_round = 0))
);

-- A player's games, for "which game am I in".
CREATE INDEX game_players_account ON game_players (account_id);

CREATE TABLE round_moves (
    game_id      uuid NOT NULL,
    round        integer NOT NULL CHECK (round >= 1),
    account_id   uuid NOT NULL,
    commitment   bytea NOT NULL CHECK (length(commitment) = 32),
    committed_at bigint NOT NULL,
    revealed     boolean NOT NULL DEFAULT false,
    -- The reveal's exact bytes (its password part may be any bytes), NULL until revealed.
    reveal       bytea CHECK (length(reveal) BETWEEN 1 AND 1024),
    move         smallint CHECK (move BETWEEN 0 AND 9),
    revealed_at  bigint,
    PRIMARY KEY (game_id, round, account_id),
    FOREIGN KEY (game_id, account_id) REFERENCES game_players (game_id, account_id),
    CHECK (revealed = (reveal IS NOT NULL)),
    CHECK (revealed = (move IS NOT NULL)),
    CHECK (revealed = (revealed_at IS NOT NULL)),
    CHECK (get_byte(reveal, 0) - 48 = move)
);

-- Double entry: a posting is two rows with opposite amounts and the same posting_id. A row's
-- ledger account is the treasury, a player's balance (player_id) or a game's escrow (escrow_id).
CREATE SEQUENCE ledger_posting_seq;

CREATE TABLE ledger_entries (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    posting_id   bigint NOT NULL,
    account_kind text NOT NULL CHECK (account_kind IN ('treasury', 'player', 'escrow')),
    player_id    uuid REFERENCES accounts (id),
    escrow_id    uuid REFERENCES games (id),
    amount       bigint NOT NULL CHECK (amount <> 0),
    kind         text NOT NULL CHECK (kind IN ('credit', 'debit', 'bet', 'refund', 'payout', 'split')),
    -- The game the posting belongs to (on both of its rows), NULL for credits and debits.
    game_id      uuid REFERENCES games (id),
    at           bigint NOT NULL,
    CHECK ((player_id IS NOT NULL) = (account_kind = 'player')),
    CHECK ((escrow_id IS NOT NULL) = (account_kind = 'escrow')),
    CHECK ((game_id IS NULL) = (kind IN ('credit', 'debit')))
);

CREATE INDEX ledger_entries_posting ON ledger_entries (posting_id);
CREATE INDEX ledger_entries_player ON ledger_entries (player_id, id) WHERE player_id IS NOT NULL;
CREATE INDEX ledger_entries_escrow ON ledger_entries (escrow_id) WHERE escrow_id IS NOT NULL;

-- Each lobby's append-only, hash-chained log. The foreign keys on (lobby_id, prev_seq) and
-- (lobby_id, prev_seq, prev_hash) make the database itself refuse a gap or a broken link.
CREATE TABLE events (
    lobby_id  uuid NOT NULL REFERENCES lobbies (id),
    seq       bigint NOT NULL CHECK (seq >= 1),
    prev_seq  bigint GENERATED ALWAYS AS (NULLIF(seq - 1, 0)) STORED,
    type      text NOT NULL,
    game_id   uuid REFERENCES games (id),
    at        bigint NOT NULL,
    -- json, not jsonb: the exact canonical bytes the hash was computed over.
    data      json NOT NULL,
    prev_hash bytea NOT NULL CHECK (length(prev_hash) = 32),
    hash      bytea NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (lobby_id, seq),
    UNIQUE (lobby_id, seq, hash),
    FOREIGN KEY (lobby_id, prev_seq, prev_hash) REFERENCES events (lobby_id, seq, hash),
    CHECK (seq > 1 OR prev_hash = decode(repeat('00', 32), 'hex'))
);

-- A stored outcome per (account, method, route, key), replayed for a retried request.
CREATE TABLE idempotency_keys (
    account_id   uuid NOT NULL REFERENCES accounts (id),
    method       text NOT NULL,
    route        text NOT NULL,
    key          text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
    status       integer NOT NULL CHECK (status BETWEEN 100 AND 599),
    response     bytea NOT NULL,
    created_at   bigint NOT NULL,
    PRIMARY KEY (account_id, method, route, key)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- One row: the last beat of any live replica, to tell an outage from a restart.
CREATE TABLE heartbeat (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    replica text NOT NULL,
    beat_at bigint NOT NULL
);
