-- Who refreshes an expired OAuth token, and until when: the refresh is an HTTP call to the tenant's
-- own token endpoint, made outside any transaction, so that a slow or stalling endpoint holds no
-- database connection and no row lock that other requests would queue behind. The others wait for
-- the new token without a connection, or take the refresh over once this lapses.
alter table git_oauth_connections add column refreshing_until timestamptz;
