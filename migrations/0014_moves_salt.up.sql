-- The salt of the digest that moves_closed publishes of a round's commitments, kept with the round
-- (its game's header) while the commitments are sealed, and NULL again once the event that makes
-- them public reveals it (round_resolved, or game_finished/game_stopped). Only the core reads it:
-- no API read selects it. A salt waits only during a reveal stage.
ALTER TABLE games ADD COLUMN moves_salt bytea,
    ADD CONSTRAINT games_moves_salt CHECK (moves_salt IS NULL OR (length(moves_salt) = 32 AND stage = 'reveal'));

-- The transcript of a game's last round that ended unresolved reads the salt from the event that
-- ended the game: one per game.
CREATE INDEX events_game_ended ON events (game_id) WHERE type IN ('game_finished', 'game_stopped');
