CREATE TABLE heartbeat (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    replica text NOT NULL,
    beat_at bigint NOT NULL
);

INSERT INTO heartbeat (replica, beat_at)
SELECT replica, beat_at FROM heartbeats ORDER BY beat_at DESC LIMIT 1;

DROP TABLE heartbeats;
