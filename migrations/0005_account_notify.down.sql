DROP TRIGGER IF EXISTS accounts_deleted ON accounts;
DROP TRIGGER IF EXISTS accounts_changed ON accounts;
DROP FUNCTION IF EXISTS notify_account_changed();
