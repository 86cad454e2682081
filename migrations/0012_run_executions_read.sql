-- The executions of a run as every engine command reads them (src/engine/runs.repo.ts readRun): JSON,
-- in id order. A function so that a command's locked read is one round trip. Called by the statement
-- that locks the run row, on the row it locked, it is VOLATILE: each of its queries takes a snapshot
-- of its own once the run's lock is granted, and sees what the lock's previous holder committed (the
-- executions it inserted too). With `p_lock`, the executions are locked first (`for no key update`, in
-- id order), so a claim in flight, which locks only its own execution, is waited for; the read after
-- the locks sees each row as it will stay until the caller commits.
create function plinth_run_executions(p_run_id text, p_lock boolean) returns json language plpgsql volatile as $$
declare
  result json;
begin
  if p_lock then
    perform 1 from step_executions e where e.pipeline_run_id = p_run_id order by e.id for no key update of e;
  end if;
  select json_agg(x order by x.id) into result from (
    select e.id, e.step_id, e.status, e.attempt_epoch, e.retry_attempt, e.lease_owner, e.lease_epoch, e.started_at,
           coalesce(e.lease_expires_at < now(), false) as lease_expired,
           coalesce(e.output_data -> 'needsApproval' = 'false'::jsonb, false) as nothing_to_approve,
           case when e.status = 'QUEUED' then (select coalesce(max(seq), 0) from step_logs where step_execution_id = e.id) end as last_log_seq
      from step_executions e where e.pipeline_run_id = p_run_id) x;
  return coalesce(result, '[]'::json);
end $$;
