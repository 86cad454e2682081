-- Each waiting step's job is ranked by how many steps its organization runs and has waiting ahead of
-- it, so that a free worker slot goes to the organization running the fewest. Counting them, when a
-- job is added, reads only that organization's unfinished steps.
create index step_executions_unfinished_org_idx on step_executions (organization_id, status) where status in ('QUEUED', 'RUNNING');
