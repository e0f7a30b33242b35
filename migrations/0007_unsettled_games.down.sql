DROP INDEX IF EXISTS games_unsettled;
