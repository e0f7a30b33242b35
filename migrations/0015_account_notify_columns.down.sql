DROP TRIGGER accounts_changed ON accounts;

CREATE TRIGGER accounts_changed AFTER UPDATE ON accounts FOR EACH ROW
    WHEN ((to_jsonb(OLD) - 'balance') IS DISTINCT FROM (to_jsonb(NEW) - 'balance'))
    EXECUTE FUNCTION notify_account_changed();
