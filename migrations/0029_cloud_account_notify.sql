-- A cloud account is a credential too: its ingest secrets authenticate the events sent to it, and the
-- API keeps the accounts it checked them against in the same cache as keys, for at most a second. A
-- change to one (a rotation, a deletion) tells every process at once, as 0008 does for keys.
create trigger cloud_accounts_notify_credentials after insert or update or delete or truncate on cloud_accounts
  for each statement execute function plinth_notify_credentials();
