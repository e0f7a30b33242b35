-- Every replica caches which account a bearer token belongs to. Any change to an account that can
-- change what its tokens grant (a rotated or revoked token, a new role; anything but the balance,
-- so that columns added later are covered too) notifies rps_accounts with the account's id, on
-- commit, so that every replica forgets the account's cached tokens at once. A trigger, not the
-- Go code, so that no write path (an operator's SQL included) can forget to notify.
CREATE FUNCTION notify_account_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rps_accounts', OLD.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER accounts_changed AFTER UPDATE ON accounts FOR EACH ROW
    WHEN ((to_jsonb(OLD) - 'balance') IS DISTINCT FROM (to_jsonb(NEW) - 'balance'))
    EXECUTE FUNCTION notify_account_changed();

CREATE TRIGGER accounts_deleted AFTER DELETE ON accounts FOR EACH ROW
    EXECUTE FUNCTION notify_account_changed();
