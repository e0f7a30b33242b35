-- Games are settled (their results added to the standings) after the transaction that ends them,
-- outside the lobby's lock; a sweep settles those a stopped replica left, and finds them here.
CREATE INDEX games_unsettled ON games (ended_at) WHERE NOT settled AND stage IN ('finished', 'stopped');
