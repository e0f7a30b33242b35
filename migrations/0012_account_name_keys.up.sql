-- Account names are unique under the PRECIS Nickname profile's comparison (tournament.Name):
-- players tell opponents apart by name, so "Alice", "alice" and "ａｌｉｃｅ" are one name. name_key
-- is the profile's comparison key, which rpsd computes and writes with every account.
ALTER TABLE accounts ADD COLUMN name_key text;

-- The accounts made before are keyed as the profile keys a name already in its form: lower case
-- and NFKC (exact for the names rpsd accepted, but for case beyond what the database's locale
-- folds).
UPDATE accounts SET name_key = normalize(lower(name), NFKC);

-- Of several accounts with one key, the oldest keeps its name; each other one is renamed, its
-- name followed by " #" and the start of its id, so that nobody is shown under another's name.
UPDATE accounts a
SET name = a.name || ' #' || left(a.id::text, 8),
    name_key = normalize(lower(a.name || ' #' || left(a.id::text, 8)), NFKC)
FROM (SELECT id, row_number() OVER (PARTITION BY name_key ORDER BY created_at, id) AS n FROM accounts) d
WHERE d.id = a.id AND d.n > 1;

ALTER TABLE accounts ALTER COLUMN name_key SET NOT NULL;
CREATE UNIQUE INDEX accounts_name_key ON accounts (name_key);
