// run: start, list, get, wait, logs, approve, reject, cancel, retry. A command that waits for a run ends
// with the exit code of where the run got to (docs/cli.md#exit-codes).

import type { Command } from 'commander';
import { unwrap, type LogLine, type PipelineRun, type StepExecution } from '@plinth/sdk';
import { action, all, collect, parseDuration, parseVars } from '../command-kit.ts';
import { CliExit, EXIT, exitCodeOfRunStatus, UsageError } from '../exit-codes.ts';
import type { Column } from '../output.ts';
import type { Session } from '../session.ts';
import { followRun, printLine, stepsOfRun, waitOutcome } from '../run-follow.ts';

const runColumns: Column<PipelineRun>[] = [
  ['ID', (r) => r.id],
  ['STATUS', (r) => r.status],
  ['ACTION', (r) => r.action],
  ['STACK', (r) => r.attachedEntityId],
  ['QUEUE', (r) => r.queueState.reason],
  ['CREATED', (r) => r.createdAt],
];
const stepColumns: Column<StepExecution>[] = [
  ['STEP', (e) => e.stepId],
  ['TYPE', (e) => e.stepType],
  ['STATUS', (e) => e.status],
  ['ATTEMPT', (e) => `${e.attemptEpoch}.${e.retryAttempt}`],
  ['ID', (e) => e.id],
  ['ERROR', (e) => (e.error as { code?: string } | undefined)?.code],
];

async function getRun(s: Session, id: string): Promise<PipelineRun> {
  return (await unwrap(s.plinth.api.GET('/pipeline-runs/{id}', { params: { path: { id } } }))).data;
}

interface WaitFlags {
  timeout?: string;
}

/** finish prints the run and exits with what its status means. */
function finish(s: Session, run: PipelineRun): never {
  s.out.item(run);
  if (run.status === 'WAITING_FOR_APPROVAL') s.out.info(`run ${run.id} is waiting for approval: plinth run approve ${run.id}`);
  else s.out.info(`run ${run.id} ${run.status}${run.error?.message ? `: ${run.error.message}` : ''}`);
  throw new CliExit(exitCodeOfRunStatus(run.status));
}

/** waitThenFinish waits (quietly, or following the logs) until the run ends or waits for a person. */
async function waitThenFinish(s: Session, runId: string, follow: boolean, flags: WaitFlags, stepId?: string): Promise<never> {
  const timeoutMs = flags.timeout === undefined ? undefined : parseDuration(flags.timeout);
  const run = follow ? await followRun(s, runId, timeoutMs, stepId) : await waitOutcome(s.plinth, runId, timeoutMs);
  return finish(s, run);
}

/** The step execution a decision is about: the one of `stepId`, else the only one waiting. */
async function waitingStep(s: Session, runId: string, stepId?: string): Promise<StepExecution> {
  const waiting = (await stepsOfRun(s.plinth, runId)).filter((e) => e.status === 'WAITING_FOR_APPROVAL' && (stepId === undefined || e.stepId === stepId));
  if (waiting.length === 0) throw new CliExit(EXIT.ERROR, `run ${runId} has no step${stepId ? ` "${stepId}"` : ''} waiting for approval`);
  if (waiting.length > 1)
    throw new UsageError(`run ${runId} has ${waiting.length} steps waiting for approval: pick one with --step (${waiting.map((e) => e.stepId).join(', ')})`);
  return waiting[0];
}

export function runCommands(program: Command) {
  const run = program.command('run').description('pipeline runs');

  run
    .command('start <stack>')
    .description("start a run of the stack's change pipeline (apply by default)")
    .option('--plan', 'run the change pipeline up to its first approval only')
    .option('--destroy', "run the stack's destroy pipeline")
    .option('--var <key=value>', 'a run input (repeatable; the value is JSON when it parses as JSON)', collect, [])
    .option('--description <text>')
    .option('--auto-approve', "approve the run's approval steps on its own")
    .option('--wait', 'wait until the run ends or waits for approval, and exit with what it means')
    .option('--follow', 'like --wait, printing the logs of its steps as they are written')
    .option('--timeout <duration>', 'with --wait or --follow: give up after this long (exit 7)')
    .action(
      action(
        async (
          s: Session,
          stackId: string,
          o: { plan?: boolean; destroy?: boolean; var: string[]; description?: string; autoApprove?: boolean; wait?: boolean; follow?: boolean } & WaitFlags,
        ) => {
          if (o.plan && o.destroy) throw new UsageError('--plan and --destroy exclude each other');
          const inputs = parseVars(o.var);
          const data = {
            action: o.destroy ? ('destroy' as const) : o.plan ? ('plan' as const) : ('apply' as const),
            ...(Object.keys(inputs).length ? { inputs } : {}),
            ...(o.description !== undefined ? { description: o.description } : {}),
            ...(o.autoApprove ? { autoapprove: true } : {}),
          };
          const started = (await unwrap(s.plinth.api.POST('/stacks/{id}/pipeline-run', { params: { path: { id: stackId } }, body: { data } }))).data;
          if (!o.wait && !o.follow) return s.out.item(started);
          s.out.info(`started run ${started.id}`);
          await waitThenFinish(s, started.id, Boolean(o.follow), o);
        },
      ),
    );

  run
    .command('list')
    .description('runs, in the order the API keeps them (id)')
    .option('--stack <id>')
    .option('--pipeline <id>')
    .option('--status <status>')
    .action(
      action(async (s: Session, o: { stack?: string; pipeline?: string; status?: PipelineRun['status'] }) => {
        const query = {
          ...(o.stack ? { stackId: o.stack } : {}),
          ...(o.pipeline ? { pipelineId: o.pipeline } : {}),
          ...(o.status ? { status: o.status } : {}),
        };
        s.out.list(await all(s.plinth.paginate('/pipeline-runs', { query })), runColumns);
      }),
    );

  run
    .command('get <run>')
    .description('a run; in a table, with its steps')
    .action(
      action(async (s: Session, id: string) => {
        const found = await getRun(s, id);
        s.out.item(found);
        if (s.out.format === 'table') {
          s.out.stdout.write('\n');
          s.out.list(await stepsOfRun(s.plinth, id), stepColumns);
        }
      }),
    );

  run
    .command('steps <run>')
    .description('the step executions of a run, every attempt')
    .action(
      action(async (s: Session, id: string) => {
        s.out.list(await stepsOfRun(s.plinth, id), stepColumns);
      }),
    );

  run
    .command('wait <run>')
    .description('wait until the run ends or waits for approval; the exit code says which')
    .option('--timeout <duration>', 'give up after this long (exit 7)')
    .action(action((s: Session, id: string, o: WaitFlags) => waitThenFinish(s, id, false, o)));

  run
    .command('logs <run>')
    .description("the logs of the run's steps")
    .option('-f, --follow', 'keep printing until the run ends or waits for approval (exit code as run wait)')
    .option('--step <stepId>', 'only this step')
    .action(
      action(async (s: Session, id: string, o: { follow?: boolean; step?: string }) => {
        if (o.follow) return void (await waitThenFinish(s, id, true, {}, o.step));
        const steps = (await stepsOfRun(s.plinth, id)).filter((e) => (o.step === undefined || e.stepId === o.step) && e.stepType !== 'approval');
        if (o.step !== undefined && steps.length === 0) throw new CliExit(EXIT.NOT_FOUND, `run ${id} has no step "${o.step}"`);
        const lines: (LogLine & { stepId: string; stepExecutionId: string })[] = [];
        for (const step of steps) {
          for await (const line of s.plinth.logs.lines(step.id)) {
            if (s.out.format === 'table') printLine(s, step, line, s.out.stdout);
            else lines.push({ stepId: step.stepId, stepExecutionId: step.id, ...line });
          }
        }
        if (s.out.format !== 'table') s.out.document(lines);
      }),
    );

  for (const decision of ['approve', 'reject'] as const) {
    run
      .command(`${decision} <run>`)
      .description(`${decision} the run's step that waits for approval`)
      .option('--step <stepId>', 'the approval step, when more than one waits')
      .action(
        action(async (s: Session, id: string, o: { step?: string }) => {
          const step = await waitingStep(s, id, o.step);
          const path = decision === 'approve' ? '/pipeline-step-executions/{id}/approve' : '/pipeline-step-executions/{id}/reject';
          const decided = (await unwrap(s.plinth.api.POST(path, { params: { path: { id: step.id } } }))).data;
          s.out.info(`${decision === 'approve' ? 'approved' : 'rejected'} step "${step.stepId}" of run ${id}`);
          s.out.item(decided);
        }),
      );
  }

  run
    .command('cancel <run>')
    .description('cancel a run that has not ended; its running steps are killed')
    .action(
      action(async (s: Session, id: string) => {
        s.out.item((await unwrap(s.plinth.api.POST('/pipeline-runs/{id}/cancel', { params: { path: { id } } }))).data);
      }),
    );
  run
    .command('retry <run>')
    .description('run a FAILED or CANCELLED run again as its next attempt')
    .action(
      action(async (s: Session, id: string) => {
        s.out.item((await unwrap(s.plinth.api.POST('/pipeline-runs/{id}/retry', { params: { path: { id } } }))).data);
      }),
    );
}
