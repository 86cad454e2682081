-- A key minted for a Git sign-in's console session names the link it was minted through, and so does
-- any key made with such a key. Unlinking the account (or linking another in its place), deleting the
-- Git server, or changing what vouches for its logins deletes the link, and with it those keys and
-- (through console_sessions.api_key_id) their sessions: a login the user no longer trusts must not go
-- on acting until its session expires.
alter table api_keys add column git_identity_id text references git_identities (id) on delete cascade;
create index api_keys_git_identity_idx on api_keys (git_identity_id) where git_identity_id is not null;

-- Keys minted before this column existed name no link: their sessions end now (their users sign in
-- again) rather than outlive an unlink.
delete from api_keys where id in (select api_key_id from console_sessions where minted_key);
