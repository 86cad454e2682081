-- Step output stored byte for byte (docs/engine.md#logs). `line` stays the API's string: the text itself
-- when the record is valid UTF-8 without NUL bytes (then `bytes` is null and `line` is exact), otherwise
-- a visible escape of it, with the exact bytes in `bytes`. A line longer than a record (16 KiB) is split
-- into several; `partial` marks a record not ended by a newline.
alter table step_logs
  add column bytes bytea,
  add column partial boolean not null default false;
