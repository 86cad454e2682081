-- The fencing token of a step execution's lease (docs/engine.md, "Exactly once"): every claim bumps it,
-- and a worker's heartbeat, completion or hand-back only applies while the epoch it claimed is
-- current, so a worker that lost its lease can never write over the one that took over.
alter table step_executions add column lease_epoch integer not null default 0;
