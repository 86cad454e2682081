-- Operability (docs/operations.md): what the metrics sample cheaply, and the audit log.

-- The metrics' queue sampler counts unfinished runs and waiting approvals every 15 s: through these
-- partial indexes it reads only the rows it counts, however many finished ones there are.
create index pipeline_runs_active_status_idx on pipeline_runs (status) where status in ('QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL');
create index step_executions_waiting_approval_idx on step_executions (status) where status = 'WAITING_FOR_APPROVAL';
