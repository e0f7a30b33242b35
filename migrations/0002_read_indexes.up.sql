-- Indexes for the API's reads: a round's result in the transcript, and the lobby list in order.
CREATE INDEX events_round_resolved ON events (game_id, ((data ->> 'round')::int)) WHERE type = 'round_resolved';
CREATE INDEX lobbies_created ON lobbies (created_at, id);
