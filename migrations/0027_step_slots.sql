-- The worker slot a step execution holds, for the limit on how many steps of one organization run at
-- once (docs/engine.md#organizations-share-the-workers). A claim takes the slot until a lease from now;
-- the worker's heartbeat renews it for as long as the attempt's process lives, a cancelled one still
-- stopping included; the worker gives it back when the attempt ends, and a dead worker's slot lapses
-- with its heartbeat.
alter table step_executions add column slot_held_until timestamptz;
create index step_executions_slot_idx on step_executions (organization_id) where slot_held_until is not null;
