-- How often each account left each game: a game takes an account back at most
-- tournament.MaxLeavesPerGame times, since every register/leave cycle is written for good (events,
-- ledger postings). The leaves already in the log are counted, so a game open now keeps its count.
CREATE TABLE game_leaves (
    game_id    uuid NOT NULL REFERENCES games (id),
    account_id uuid NOT NULL REFERENCES accounts (id),
    leaves     integer NOT NULL CHECK (leaves > 0),
    PRIMARY KEY (game_id, account_id)
);

INSERT INTO game_leaves (game_id, account_id, leaves)
SELECT game_id, (data ->> 'player')::uuid, count(*)
FROM events
WHERE type = 'player_left'
GROUP BY 1, 2;
