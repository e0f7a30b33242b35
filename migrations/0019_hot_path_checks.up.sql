-- The rows every action writes no longer have PostgreSQL evaluate CHECK constraints (issue 30).
-- PostgreSQL rebuilds a table's CHECK expressions from their stored text for every statement that
-- writes the table (stringToNode, the planner's simplification, ExecInitExpr; nothing is kept
-- between statements): in the mixed load's profile of PostgreSQL, ExecConstraints was 12% of the
-- backends' samples, and the statement of the rows every action writes touches five tables with
-- 40 checks between them. store's BenchmarkHeldWrites (batches of 4) spent 24-30% less execution
-- time on the held writes without them.
--
-- These rows are written only by the committer, from rows it read under its locks, by the rules
-- of package tournament: the checks restated those rules (a stage's name, a counter's bounds, a
-- reveal's first digit being its move). Every store test now checks, when it ends, that every row
-- still satisfies each of them, with PostgreSQL's own definitions: it runs this migration's down
-- in a transaction that it rolls back (adding a CHECK constraint validates every row).
--
-- Kept: every check that guards money (a player's balance, which a concurrent spend breaks and
-- the committer retries on; a game's escrow and payout, and no escrow left in an ended game;
-- every check of the ledger) and the role that the balance's check depends on.

ALTER TABLE accounts DROP CONSTRAINT accounts_active_keys_check;
ALTER TABLE accounts DROP CONSTRAINT accounts_key_seq_check;
ALTER TABLE accounts DROP CONSTRAINT accounts_name_check;
ALTER TABLE accounts DROP CONSTRAINT accounts_previous_token_expires;
ALTER TABLE accounts DROP CONSTRAINT accounts_previous_token_hash_check;
ALTER TABLE accounts DROP CONSTRAINT accounts_token_hash_check;

ALTER TABLE events DROP CONSTRAINT events_check;
ALTER TABLE events DROP CONSTRAINT events_hash_check;
ALTER TABLE events DROP CONSTRAINT events_prev_hash_check;
ALTER TABLE events DROP CONSTRAINT events_seq_check;

ALTER TABLE game_players DROP CONSTRAINT game_players_check;
ALTER TABLE game_players DROP CONSTRAINT game_players_eliminated_round_check;
ALTER TABLE game_players DROP CONSTRAINT game_players_ord_check;

ALTER TABLE games DROP CONSTRAINT games_check;
ALTER TABLE games DROP CONSTRAINT games_check1;
ALTER TABLE games DROP CONSTRAINT games_check3;
ALTER TABLE games DROP CONSTRAINT games_check4;
ALTER TABLE games DROP CONSTRAINT games_check5;
ALTER TABLE games DROP CONSTRAINT games_committed_check;
ALTER TABLE games DROP CONSTRAINT games_extensions_check;
ALTER TABLE games DROP CONSTRAINT games_joined_check;
ALTER TABLE games DROP CONSTRAINT games_moves_salt;
ALTER TABLE games DROP CONSTRAINT games_number_check;
ALTER TABLE games DROP CONSTRAINT games_revealed_check;
ALTER TABLE games DROP CONSTRAINT games_round_check;
ALTER TABLE games DROP CONSTRAINT games_stage_check;

ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_key_check;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_one_format;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_request_hash_check;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_status_check;

ALTER TABLE lobbies DROP CONSTRAINT lobbies_check;
ALTER TABLE lobbies DROP CONSTRAINT lobbies_games_check;
ALTER TABLE lobbies DROP CONSTRAINT lobbies_last_hash_check;
ALTER TABLE lobbies DROP CONSTRAINT lobbies_last_seq_check;

ALTER TABLE round_moves DROP CONSTRAINT round_moves_check;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_check1;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_check2;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_check3;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_commit_signature_check;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_commitment_check;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_move_check;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_reveal_check;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_reveal_signature_check;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_round_check;
