ALTER TABLE events ADD CONSTRAINT events_lobby_id_fkey FOREIGN KEY (lobby_id) REFERENCES lobbies (id);
ALTER TABLE events ADD CONSTRAINT events_game_id_fkey FOREIGN KEY (game_id) REFERENCES games (id);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);
ALTER TABLE round_moves ADD CONSTRAINT round_moves_game_id_account_id_fkey
    FOREIGN KEY (game_id, account_id) REFERENCES game_players (game_id, account_id);
ALTER TABLE game_players ADD CONSTRAINT game_players_game_id_fkey FOREIGN KEY (game_id) REFERENCES games (id);
ALTER TABLE game_players ADD CONSTRAINT game_players_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_player_id_fkey FOREIGN KEY (player_id) REFERENCES accounts (id);
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_escrow_id_fkey FOREIGN KEY (escrow_id) REFERENCES games (id);
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_game_id_fkey FOREIGN KEY (game_id) REFERENCES games (id);
