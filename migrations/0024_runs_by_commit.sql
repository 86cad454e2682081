-- Finding an organization's runs by commit (`GET /pipeline-runs?commitSha=`, a SHA or its first hex
-- digits): text_pattern_ops lets a prefix match (`like 'abc%'`) read a range of the index instead of
-- every run of the organization.
create index pipeline_runs_commit_idx on pipeline_runs (organization_id, commit_sha text_pattern_ops) where commit_sha is not null;
