DROP INDEX IF EXISTS lobbies_created;
DROP INDEX IF EXISTS events_round_resolved;
