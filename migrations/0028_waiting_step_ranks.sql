-- A step's job is ranked by how many unfinished steps its organization has, so that a free worker
-- slot favours the organizations with the fewest. Counting them, when a job is added, reads only that
-- organization's unfinished steps.
create index step_executions_unfinished_org_idx on step_executions (organization_id, status) where status in ('QUEUED', 'RUNNING');
