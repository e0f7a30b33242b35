-- The transparency log over every lobby's events (package translog): one RFC 6962 Merkle tree,
-- stored as C2SP tiles, with signed checkpoints that witnesses cosign.

-- Which transaction wrote each event, so the integrator finds what is new by an index range:
-- every event whose transaction id is below the oldest one still running is committed (or gone).
-- Events written before the log existed read '1' (a constant default rewrites nothing); new ones
-- get their transaction's id.
ALTER TABLE events ADD COLUMN log_xid xid8 NOT NULL DEFAULT '1';
ALTER TABLE events ALTER COLUMN log_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX events_log_xid ON events (log_xid, lobby_id);

-- The log: its origin (fixed when it is created: witnesses know a log by it), its tree, and the
-- transaction id below which every committed event is in the tree. The integration that grows it
-- locks this row.
CREATE TABLE log_state (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    origin     text NOT NULL,
    size       bigint NOT NULL DEFAULT 0 CHECK (size >= 0),
    root       bytea NOT NULL CHECK (length(root) = 32),
    floor      xid8 NOT NULL DEFAULT '0',
    updated_at bigint NOT NULL
);

-- Hash tiles (C2SP tlog-tiles, height 8): each row holds the first 1 to 256 hashes of a tile, as
-- many as the tree has. A full tile never changes; the partial ones at the right edge grow.
CREATE TABLE log_tiles (
    level  smallint NOT NULL CHECK (level BETWEEN 0 AND 63),
    n      bigint NOT NULL CHECK (n >= 0),
    hashes bytea NOT NULL CHECK (length(hashes) BETWEEN 32 AND 8192 AND length(hashes) % 32 = 0),
    PRIMARY KEY (level, n)
);

-- Runs of a lobby's events at consecutive leaves: leaf first_index + i is event first_seq + i of
-- the lobby, for i below count. An integration writes one per lobby it logs.
CREATE TABLE log_ranges (
    first_index bigint PRIMARY KEY CHECK (first_index >= 0),
    lobby_id    uuid NOT NULL,
    first_seq   bigint NOT NULL CHECK (first_seq >= 1),
    count       bigint NOT NULL CHECK (count >= 1)
);
CREATE UNIQUE INDEX log_ranges_lobby ON log_ranges (lobby_id, first_seq);

-- Each lobby's newest logged event and its leaf.
CREATE TABLE log_heads (
    lobby_id   uuid PRIMARY KEY,
    seq        bigint NOT NULL CHECK (seq >= 1),
    leaf_index bigint NOT NULL CHECK (leaf_index >= 0)
);

-- Every checkpoint signed: the note as the log signed it, and the witnesses' cosignature lines
-- once gathered. /checkpoint serves the newest published one (published once its witnesses
-- answered, or at once when there are none).
CREATE TABLE log_checkpoints (
    size         bigint PRIMARY KEY CHECK (size >= 0),
    root         bytea NOT NULL CHECK (length(root) = 32),
    note         text NOT NULL,
    cosignatures text NOT NULL DEFAULT '',
    created_at   bigint NOT NULL,
    published_at bigint
);
CREATE INDEX log_checkpoints_published ON log_checkpoints (size) WHERE published_at IS NOT NULL;

-- The size each witness last cosigned (or told us it had), to send it the right consistency proof.
CREATE TABLE log_witnesses (
    name       text PRIMARY KEY,
    size       bigint NOT NULL CHECK (size >= 0),
    updated_at bigint NOT NULL
);
