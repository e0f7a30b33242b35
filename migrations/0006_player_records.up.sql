-- What players and admins look up: a player's games with their results, per-account totals for
-- the standings (kept when a game settles, so no read scans the ledger), account status and the
-- admins' audit log.

-- When an admin disabled the account (Unix ms); NULL while it is active. A disabled account can
-- no longer act; its balance and its bets stay where they are.
ALTER TABLE accounts ADD COLUMN disabled_at bigint;

-- Admin search by name prefix, case-insensitive, paged in (name, id) order. "C" collation: a
-- prefix LIKE and the paging order both use the index.
CREATE INDEX accounts_name_lower ON accounts ((lower(name) COLLATE "C"), id);

-- Whether the players' results of the game have been added to their totals (once, when it ended).
ALTER TABLE games ADD COLUMN settled boolean NOT NULL DEFAULT false;

-- A player's games, newest first (it also answers "which game am I in").
DROP INDEX game_players_account;
CREATE INDEX game_players_account_recent ON game_players (account_id, registered_at DESC, game_id DESC);

-- Every settled game a player played (stops during registration are refunds, not games), added
-- up in the transaction that settles the game. The totals tables have no foreign key to accounts:
-- their rows are written only from game_players rows, whose account_id has one, and checking it
-- again per row was a third of the cost of settling a large game.
CREATE TABLE account_totals (
    account_id uuid PRIMARY KEY,
    games      integer NOT NULL CHECK (games >= 1),
    wins       integer NOT NULL CHECK (wins >= 0 AND wins <= games),
    net        bigint NOT NULL
);

-- The standings by wins and by net, each a keyset walk of one index (best first, then by id).
CREATE INDEX account_totals_by_wins ON account_totals ((-wins), (-net), account_id);
CREATE INDEX account_totals_by_net ON account_totals ((-net), (-wins), account_id);

-- The same totals per UTC day (days since the epoch) of the game's end.
CREATE TABLE account_days (
    day        integer NOT NULL,
    account_id uuid NOT NULL,
    games      integer NOT NULL CHECK (games >= 1),
    wins       integer NOT NULL CHECK (wins >= 0 AND wins <= games),
    net        bigint NOT NULL,
    PRIMARY KEY (day, account_id)
);

-- The standings over the last days are kept like the all-time ones: a settle adds to the totals
-- of each period, and once a day the days that left a period are subtracted (from
-- account_days). A period's totals hold exactly the days after its base.
CREATE TABLE periods (
    days integer PRIMARY KEY CHECK (days > 0),
    base integer NOT NULL
);
INSERT INTO periods (days, base) VALUES (7, 0), (30, 0);

CREATE TABLE account_period_totals (
    days       integer NOT NULL,
    account_id uuid NOT NULL,
    games      integer NOT NULL CHECK (games >= 1),
    wins       integer NOT NULL CHECK (wins >= 0 AND wins <= games),
    net        bigint NOT NULL,
    PRIMARY KEY (days, account_id)
);
CREATE INDEX account_period_totals_by_wins ON account_period_totals (days, (-wins), (-net), account_id);
CREATE INDEX account_period_totals_by_net ON account_period_totals (days, (-net), (-wins), account_id);

-- A game's postings to its players: a player's net result in a game is the sum of its entries,
-- read with one probe for a game of a player's history and with one range for a game settling.
CREATE INDEX ledger_entries_game_player ON ledger_entries (game_id, player_id) WHERE account_kind = 'player';

-- Every admin action that reached the game or an account, newest last.
CREATE TABLE IF NOT EXISTS admin_audit (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor  uuid NOT NULL REFERENCES accounts (id),
    action text NOT NULL,
    -- What the action was applied to: an account or lobby id ('' when none).
    target text NOT NULL,
    detail jsonb NOT NULL,
    at     bigint NOT NULL
);
