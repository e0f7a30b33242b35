DROP INDEX events_game_ended;
ALTER TABLE games DROP COLUMN moves_salt;
