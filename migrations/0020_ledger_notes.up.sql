-- A credit's or debit's ledger entries record the admin's memo and the admin's signature of the
-- request (tournament.MoneyNote), so that the player whose balance moved sees them in its own
-- ledger (GET /v1/me/ledger) and can check the signature against the admin's public key log.
-- NULL for the postings of games, for unsigned requests and for entries written before this
-- migration (the admins' audit log keeps the requests of those).
ALTER TABLE ledger_entries ADD COLUMN memo text, ADD COLUMN auth jsonb;
