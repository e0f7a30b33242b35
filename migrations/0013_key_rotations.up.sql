-- A log key's hand-over to its successor: the key rotation statement (translog.Rotation, a C2SP
-- signed note by the key this one replaced, naming this one and the log's tree at the rotation).
-- NULL for the first key; a key rotated before this column gets its statement when rpsd next
-- starts (store.SignPastRotations). Clients that pinned the old key follow it (GET /v1/log).
ALTER TABLE signing_keys ADD COLUMN rotation text;
