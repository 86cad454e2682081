-- Every engine command reads a run's executions with a plain query of its own once it holds the
-- run's lock (src/engine/runs.repo.ts readRun): the function that did it in one round trip goes.
drop function if exists plinth_run_executions(text, boolean);
