-- Every API process caches resolved credentials for at most a second; a change to any table a
-- credential is resolved from tells every process at once, through LISTEN plinth_credentials
-- (src/platform/auth/credential-store.ts). One notification per statement, whatever it touched.
create function plinth_notify_credentials() returns trigger language plpgsql as $$
begin
  perform pg_notify('plinth_credentials', tg_table_name);
  return null;
end;
$$;

create trigger api_keys_notify_credentials after insert or update or delete or truncate on api_keys
  for each statement execute function plinth_notify_credentials();
create trigger users_notify_credentials after insert or update or delete or truncate on users
  for each statement execute function plinth_notify_credentials();
create trigger memberships_notify_credentials after insert or update or delete or truncate on memberships
  for each statement execute function plinth_notify_credentials();
create trigger service_accounts_notify_credentials after insert or update or delete or truncate on service_accounts
  for each statement execute function plinth_notify_credentials();
create trigger organizations_notify_credentials after insert or update or delete or truncate on organizations
  for each statement execute function plinth_notify_credentials();
