// run: start, list, get, steps, wait, logs, approve, reject, cancel, retry. A command that waits for a run
// ends with the exit code of where the run got to (docs/cli.md#exit-codes).

import { Option, type Command } from 'commander';
import { TERMINAL_RUN_STATUSES, unwrap, type LogLine, type PipelineRun, type StepExecution } from '@plinth/sdk';
import { action, collect, examples, parseDuration, parseVars } from '../command-kit.ts';
import { RUN_STATUSES } from '../enums.ts';
import { CliExit, EXIT, exitCodeOfRunStatus, UsageError } from '../exit-codes.ts';
import { printList, readList, withListOptions, type ListFlags } from '../listing.ts';
import type { Column } from '../output.ts';
import type { Session } from '../session.ts';
import { explainFailure, FAILED_TAIL_LINES, failedSteps, followRun, printLine, stepLines, stepsOfRun, waitOutcome } from '../run-follow.ts';
import { watch } from '../watch.ts';

const runColumns = (stacks: Map<string, string>): Column<PipelineRun>[] => [
  ['ID', (r) => r.id],
  ['STATUS', (r) => r.status],
  ['ACTION', (r) => r.action],
  ['STACK', (r) => (r.attachedEntityId ? (stacks.get(r.attachedEntityId) ?? r.attachedEntityId) : '')],
  ['QUEUE', (r) => r.queueState.reason],
  ['CREATED', (r) => r.createdAt],
  ['STACK ID', (r) => r.attachedEntityId, 'wide'],
  ['PIPELINE', (r) => r.pipelineId, 'wide'],
];
const stepColumns: Column<StepExecution>[] = [
  ['STEP', (e) => e.stepId],
  ['TYPE', (e) => e.stepType],
  ['STATUS', (e) => e.status],
  ['ATTEMPT', (e) => `${e.attemptEpoch}.${e.retryAttempt}`],
  ['ERROR', (e) => (e.error as { code?: string } | undefined)?.code],
  ['ID', (e) => e.id, 'wide'],
];

function parseStatus(value: string): PipelineRun['status'] {
  const status = value.toUpperCase().replace(/-/g, '_');
  if (!(RUN_STATUSES as readonly string[]).includes(status)) throw new UsageError(`--status is one of ${RUN_STATUSES.join(', ')}, not "${value}"`);
  return status as PipelineRun['status'];
}

async function getRun(s: Session, id: string): Promise<PipelineRun> {
  return (await unwrap(s.plinth.api.GET('/pipeline-runs/{id}', { params: { path: { id } } }))).data;
}

/** What a person wants of a run at a glance; -o wide, json and yaml show the whole record. */
async function runSummary(s: Session, run: PipelineRun): Promise<Record<string, unknown>> {
  const error = run.error as { code?: string; message?: string } | undefined;
  return {
    id: run.id,
    status: run.status,
    action: run.action,
    stack: run.attachedEntityId ? await s.names.label('stack', run.attachedEntityId) : undefined,
    pipeline: await s.names.label('pipeline', run.pipelineId),
    description: run.description || undefined,
    commit: run.commitSha,
    queue: run.status === 'QUEUED' ? run.queueState.reason : undefined,
    created: run.createdAt,
    started: run.startedAt,
    completed: run.completedAt,
    error: error?.message ? `${error.message}${error.code ? ` (${error.code})` : ''}` : undefined,
  };
}

/** showRun prints a run (a summary in a table, with its steps) and, for a failed one, why it failed. */
async function showRun(s: Session, run: PipelineRun) {
  if (s.out.format !== 'table') return s.out.item(run);
  s.out.item(await runSummary(s, run));
  s.out.stdout.write('\n');
  s.out.list(await stepsOfRun(s.plinth, run.id), stepColumns);
  if (run.status === 'FAILED') {
    s.out.stdout.write('\n');
    await explainFailure(s, run, s.out.stdout);
  }
}

type RunListFlags = ListFlags & {
  stack?: string;
  pipeline?: string;
  env?: string;
  createdBy?: string;
  ref?: string;
  commit?: string;
  status?: PipelineRun['status'];
  watch?: boolean;
};

export interface WaitFlags {
  timeout?: string;
}

/** finish prints the run and exits with what its status means; a failed run says why on stderr. */
async function finish(s: Session, run: PipelineRun): Promise<never> {
  s.out.item(s.out.format === 'table' ? await runSummary(s, run) : run);
  if (run.status === 'WAITING_FOR_APPROVAL') s.out.info(`run ${run.id} is waiting for approval: plinth run approve ${run.id}`);
  else if (run.status === 'FAILED') {
    s.out.info(`run ${run.id} FAILED`);
    await explainFailure(s, run, s.out.stderr);
  } else s.out.info(`run ${run.id} ${run.status}${run.error?.message ? `: ${run.error.message}` : ''}`);
  throw new CliExit(exitCodeOfRunStatus(run.status));
}

/** waitThenFinish waits (quietly, or following the logs) until the run ends or waits for a person. */
export async function waitThenFinish(s: Session, runId: string, follow: boolean, flags: WaitFlags, stepId?: string): Promise<never> {
  const timeoutMs = flags.timeout === undefined ? undefined : parseDuration(flags.timeout);
  const run = follow ? await followRun(s, runId, timeoutMs, stepId) : await waitOutcome(s, runId, timeoutMs);
  return finish(s, run);
}

const watchOption = () => new Option('-w, --watch', 'print it again every 2 seconds as it changes, until Ctrl-C (run get: until the run ends)');

/** The subcommands of `plinth run`. */
export function runCommands(run: Command) {
  examples(
    run
      .command('start <stack>')
      .description("start a run of the stack's change pipeline (apply by default); the stack by id, givenId or name")
      .option('--plan', 'run the change pipeline up to its first approval only')
      .option('--destroy', "run the stack's destroy pipeline")
      .option('--var <key=value>', 'a run input (repeatable; the value is JSON when it parses as JSON)', collect, [])
      .option('--description <text>')
      .option('--auto-approve', "approve the run's approval steps on its own")
      .option('--wait', 'wait until the run ends or waits for approval, and exit with what it means')
      .option('--follow', 'like --wait, printing the logs of its steps as they are written')
      .option('--timeout <duration>', 'with --wait or --follow: give up after this long (exit 7)'),
    'plinth run start site --follow',
    'plinth run start site --plan --var region=eu-west-1 --wait --timeout 10m',
  ).action(
    action(
      async (
        s: Session,
        ref: string,
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
        const stackId = await s.resolve('stack', ref);
        const started = (await unwrap(s.plinth.api.POST('/stacks/{id}/pipeline-run', { params: { path: { id: stackId } }, body: { data } }))).data;
        if (!o.wait && !o.follow) return s.out.item(started);
        s.out.info(`started run ${started.id}`);
        await waitThenFinish(s, started.id, Boolean(o.follow), o);
      },
    ),
  );

  examples(
    withListOptions(run.command('list').description('runs, newest first'))
      .option('--stack <stack>', 'only the runs of this stack (id, givenId or name)')
      .option('--pipeline <pipeline>', 'only the runs of this pipeline (id, givenId or name)')
      .option('--env <environment>', 'only the runs of stacks in this environment (id, givenId or name)')
      .option('--created-by <user>', 'only the runs this user or service account started (its id, or "me")')
      .option('--ref <ref>', 'only the runs of stacks that track this Git branch or tag')
      .option('--commit <sha>', 'only the runs of this commit (its SHA or the first 4 or more hex digits)')
      .addOption(new Option('--status <status>', `only runs with this status: ${RUN_STATUSES.join(', ')} (any case)`).argParser(parseStatus))
      .addOption(watchOption()),
    'plinth run list --stack site --status failed --limit 5',
    'plinth run list --env production --created-by me',
    'plinth run list --watch',
  ).action(
    action(async (s: Session, o: RunListFlags) => {
      const query = {
        ...(o.stack ? { stackId: await s.resolve('stack', o.stack) } : {}),
        ...(o.pipeline ? { pipelineId: await s.resolve('pipeline', o.pipeline) } : {}),
        ...(o.env ? { environmentId: await s.resolve('environment', o.env) } : {}),
        ...(o.createdBy ? { createdById: o.createdBy === 'me' ? (await unwrap(s.plinth.api.GET('/auth/whoami'))).data.userId : o.createdBy } : {}),
        ...(o.status ? { status: o.status } : {}),
        ...(o.ref ? { ref: o.ref } : {}),
        ...(o.commit ? { commitSha: o.commit.toLowerCase() } : {}),
      };
      const print = async () => {
        const listed = await readList(s.plinth, '/pipeline-runs', { query }, o);
        printList(s, listed, runColumns(await s.names.labels(listed.items, 'stack', (r) => r.attachedEntityId)));
      };
      if (!o.watch) return print();
      await watch(s, print, () => false);
    }),
  );

  examples(
    run.command('get <run>').description('a run; in a table, a summary with its steps, and for a failed run why it failed').addOption(watchOption()),
    'plinth run get 0192f0c4a1b27d3e8f4a5b6c7d8e9f01',
    'plinth run get 0192f0c4a1b27d3e8f4a5b6c7d8e9f01 --watch',
  ).action(
    action(async (s: Session, id: string, o: { watch?: boolean }) => {
      if (!o.watch) return showRun(s, await getRun(s, id));
      let last: PipelineRun | undefined;
      await watch(
        s,
        async () => {
          last = await getRun(s, id);
          await showRun(s, last);
        },
        () => last !== undefined && TERMINAL_RUN_STATUSES.includes(last.status),
      );
    }),
  );

  examples(run.command('steps <run>').description('the step executions of a run, every attempt'), 'plinth run steps <run> -o wide').action(
    action(async (s: Session, id: string) => {
      s.out.list(await stepsOfRun(s.plinth, id), stepColumns);
    }),
  );

  examples(
    run
      .command('wait <run>')
      .description('wait until the run ends or waits for approval; the exit code says which')
      .option('--timeout <duration>', 'give up after this long (exit 7)'),
    'plinth run wait <run> --timeout 30m',
  ).action(action((s: Session, id: string, o: WaitFlags) => waitThenFinish(s, id, false, o)));

  examples(
    run
      .command('logs <run>')
      .description("the logs of the run's steps")
      .option('-f, --follow', 'keep printing until the run ends or waits for approval (exit code as run wait)')
      .option('--step <stepId>', 'only this step')
      .option('--failed', `why the run failed: each failed step's error and its last lines (--tail, default ${FAILED_TAIL_LINES})`)
      .addOption(new Option('--tail <n>', 'only the last n lines of each step').argParser(parseTail)),
    'plinth run logs <run> --failed',
    'plinth run logs <run> --step plan --tail 50',
    'plinth run logs <run> -f',
  ).action(
    action(async (s: Session, id: string, o: { follow?: boolean; step?: string; failed?: boolean; tail?: number }) => {
      if (o.follow && (o.failed || o.tail !== undefined)) throw new UsageError('--follow prints every line as it comes: it takes neither --failed nor --tail');
      if (o.follow) return void (await waitThenFinish(s, id, true, {}, o.step));
      if (o.failed) return failedLogs(s, id, o.tail);
      const steps = (await stepsOfRun(s.plinth, id)).filter((e) => (o.step === undefined || e.stepId === o.step) && e.stepType !== 'approval');
      if (o.step !== undefined && steps.length === 0) throw new CliExit(EXIT.NOT_FOUND, `run ${id} has no step "${o.step}"`);
      const lines: (LogLine & { stepId: string; stepExecutionId: string })[] = [];
      for (const step of steps) {
        for (const line of await stepLines(s, step, o.tail)) {
          if (s.out.human) printLine(s, step, line, s.out.stdout);
          else lines.push({ stepId: step.stepId, stepExecutionId: step.id, ...line });
        }
      }
      if (!s.out.human) s.out.document(lines);
    }),
  );

  for (const decision of ['approve', 'reject'] as const) {
    examples(
      run
        .command(`${decision} <run>`)
        .description(`${decision} the run's step that waits for approval`)
        .option('--step <stepId>', 'the approval step, when more than one waits'),
      `plinth run ${decision} <run>`,
    ).action(
      action(async (s: Session, id: string, o: { step?: string }) => {
        const decided = await s.plinth.runs[decision](id, o.step === undefined ? {} : { stepId: o.step });
        s.out.info(`${decision === 'approve' ? 'approved' : 'rejected'} step "${decided.stepId}" of run ${id}`);
        s.out.item(decided);
      }),
    );
  }

  examples(run.command('cancel <run>').description('cancel a run that has not ended; its running steps are killed'), 'plinth run cancel <run>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.POST('/pipeline-runs/{id}/cancel', { params: { path: { id } } }))).data);
    }),
  );
  examples(run.command('retry <run>').description('run a FAILED or CANCELLED run again as its next attempt'), 'plinth run retry <run>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.POST('/pipeline-runs/{id}/retry', { params: { path: { id } } }))).data);
    }),
  );
}

function parseTail(value: string): number {
  const tail = Number(value);
  if (!Number.isInteger(tail) || tail < 1 || tail > 2000) throw new UsageError(`--tail takes a whole number from 1 to 2000, not "${value}"`);
  return tail;
}

/** `run logs --failed`: a failed run's reason on stdout (exit 5); a run that did not fail says so (exit per its status). */
async function failedLogs(s: Session, id: string, tail = FAILED_TAIL_LINES) {
  const found = await getRun(s, id);
  if (!s.out.human) {
    const failed = failedSteps(found, await stepsOfRun(s.plinth, id));
    const steps = [];
    for (const step of failed) steps.push({ ...step, lastLines: await stepLines(s, step, tail) });
    s.out.document({ run: found, failedSteps: steps });
  } else if (found.status === 'FAILED') {
    await explainFailure(s, found, s.out.stdout, tail);
  } else {
    s.out.info(`run ${id} is ${found.status}: it has not failed`);
  }
  throw new CliExit(exitCodeOfRunStatus(found.status));
}
