-- Each replica beats in a row of its own. With one shared row, every beat waited for the row's
-- lock: a replica stopped in the middle of its beat (SIGSTOP, a frozen VM) held up every other
-- replica's, the newest beat aged past the outage threshold, and the clock shifted as after an
-- outage that never happened. The newest beat of any replica is the newest row.
CREATE TABLE heartbeats (
    replica text PRIMARY KEY,
    beat_at bigint NOT NULL
);

CREATE INDEX heartbeats_beat_at ON heartbeats (beat_at);

INSERT INTO heartbeats (replica, beat_at) SELECT replica, beat_at FROM heartbeat;

DROP TABLE heartbeat;
