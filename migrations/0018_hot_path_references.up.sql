-- The rows every action writes no longer have their references checked by foreign keys (issue 30).
-- Each check was a query of its own and a row lock on the row referred to (a write to that row's
-- header, and WAL): about a seventh of PostgreSQL's CPU per action in store's BenchmarkHeldWrites,
-- for rows that only the committer writes, always after reading the rows they refer to under its
-- locks, and that nothing deletes (a registration is deleted only before its game has a move).
-- Every store test checks the references these keys did when it ends (danglingReferences).
--
-- Kept: the chain of each lobby's events (a gap or a broken link is refused by the database
-- itself), and the references of rows written once a game or rarer (games, lobbies, keys,
-- audit, leaves).
ALTER TABLE events DROP CONSTRAINT events_lobby_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_game_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_account_id_fkey;
ALTER TABLE round_moves DROP CONSTRAINT round_moves_game_id_account_id_fkey;
ALTER TABLE game_players DROP CONSTRAINT game_players_game_id_fkey;
ALTER TABLE game_players DROP CONSTRAINT game_players_account_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_player_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_escrow_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_game_id_fkey;
