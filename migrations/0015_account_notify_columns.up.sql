-- The accounts trigger (0005) told a change of anything but the balance by comparing the two rows
-- as jsonb without it: two to_jsonb per updated row, about 30 µs of CPU (pgbench, one balance
-- update: 126 µs with it, 91 without the trigger, 94 with this one), paid by every balance change
-- (each bet, refund and payout that the held writes apply) for a notification it never sends. It
-- now compares the columns themselves: every column but the balance. A column added later must be
-- added here: a store test (TestAccountNotifyNamesEveryColumn) compares this list to the table.
DROP TRIGGER accounts_changed ON accounts;

CREATE TRIGGER accounts_changed AFTER UPDATE ON accounts FOR EACH ROW
    WHEN ((OLD.id, OLD.name, OLD.name_key, OLD.role, OLD.token_hash, OLD.previous_token_hash,
            OLD.previous_token_expires_at, OLD.created_at, OLD.disabled_at)
        IS DISTINCT FROM (NEW.id, NEW.name, NEW.name_key, NEW.role, NEW.token_hash, NEW.previous_token_hash,
            NEW.previous_token_expires_at, NEW.created_at, NEW.disabled_at))
    EXECUTE FUNCTION notify_account_changed();
