-- An idempotency key keeps the domain result of the request it answered (response, in the format
-- result_version names), from which the API renders the replay as it rendered the first answer.
-- Keys stored before keep the HTTP answer (status, response) until they expire.
ALTER TABLE idempotency_keys ALTER COLUMN status DROP NOT NULL;
ALTER TABLE idempotency_keys ADD COLUMN result_version smallint;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_one_format
    CHECK ((status IS NULL) <> (result_version IS NULL));
