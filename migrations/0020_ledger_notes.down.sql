ALTER TABLE ledger_entries DROP COLUMN memo, DROP COLUMN auth;
