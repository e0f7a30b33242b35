-- Results have no HTTP form to go back to: their keys are forgotten (a retry runs again).
DELETE FROM idempotency_keys WHERE result_version IS NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_one_format;
ALTER TABLE idempotency_keys DROP COLUMN result_version;
ALTER TABLE idempotency_keys ALTER COLUMN status SET NOT NULL;
