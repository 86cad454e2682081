import { Type, type Static } from '@sinclair/typebox';
import { Id, Nullable, OrderedPaginationQuery, StringEnum, UtcDateTime } from '../platform/schema.ts';
import { LOG_STREAMS, RUN_ACTIONS, RUN_STATUSES, STEP_STATUSES } from '../platform/db/enums.ts';

const ErrorRef = Type.Unsafe<Record<string, unknown>>({ $ref: 'ErrorBody#' });
const FreeObject = Type.Object({}, { additionalProperties: true });

export const QueueState = Type.Object({
  preflightBlockedByAdmissionCondition: Type.Boolean({ description: 'The run waits for an admission condition (its stack is busy)' }),
  reason: Type.String({ description: 'Why the run is where it is in the queue, in words' }),
  stackRunPreflightPending: Type.Boolean({ description: 'A stack run not yet admitted to its stack' }),
  blockingEntityId: Type.Optional(Type.String()),
  blockingEntityType: Type.Optional(StringEnum(['STACK'] as const)),
  blockingModuleInstanceId: Type.Optional(Type.String()),
  blockingModuleName: Type.Optional(Type.String()),
  conditionKey: Type.Optional(Type.String()),
  environmentId: Type.Optional(Type.String()),
  projectId: Type.Optional(Type.String()),
});

export const QUEUE_REASONS = ['WAITING_FOR_STACK', 'WAITING_FOR_WORKER', 'RUNNING', 'WAITING_FOR_APPROVAL', 'FINISHED'] as const;

export const PipelineRun = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    pipelineId: Type.String(),
    pipelineVersionId: Type.String(),
    status: StringEnum(RUN_STATUSES),
    attemptEpoch: Type.Integer(),
    description: Type.String(),
    isCancellable: Type.Boolean(),
    queueConditionKey: Type.String({ description: 'What the run queues on: stack:<id>, or run:<id> for a run with no stack' }),
    queueReason: StringEnum(QUEUE_REASONS),
    queueState: QueueState,
    engineWorkflowId: Type.String(),
    variantId: Type.String(),
    variantName: Type.String(),
    autoapprove: Type.Boolean(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    action: Type.Optional(StringEnum(RUN_ACTIONS)),
    attachedEntityId: Type.Optional(Type.String({ description: 'The stack the run belongs to' })),
    completedAt: Type.Optional(UtcDateTime),
    createdById: Type.Optional(Type.String()),
    error: Type.Optional(ErrorRef),
    input: Type.Optional(FreeObject),
    lastAttemptStartedAt: Type.Optional(UtcDateTime),
    startedAt: Type.Optional(UtcDateTime),
    engineRunId: Type.Optional(Type.String()),
    triggerMetadata: Type.Optional(Type.Object({ trigger_given_id: Type.Optional(Type.String()), webhook_event: Type.Optional(Type.String()) })),
    commitSha: Type.Optional(
      Type.String({
        description:
          "The commit of the stack's code source the run checked out: resolved by its first step (or given by the push that triggered it), then used by every step and retry",
      }),
    ),
    data: Type.Optional(
      Type.Object(
        {
          kind: StringEnum(['stack'] as const),
          module_input: FreeObject,
          module_version_id: Type.String(),
          previous_module_input: Type.Optional(FreeObject),
          previous_module_version_id: Type.Optional(Type.String()),
        },
        { description: "A module deploy's run: the inputs and module version it deploys, and those the instance deployed before" },
      ),
    ),
  },
  { $id: 'PipelineRun', title: 'PipelineRun' },
);
export type PipelineRun = Static<typeof PipelineRun>;

export const StepExecution = Type.Object(
  {
    id: Type.String(),
    organizationId: Type.String(),
    pipelineRunId: Type.String(),
    stepId: Type.String(),
    stepName: Type.String(),
    stepType: Type.String(),
    status: StringEnum(STEP_STATUSES),
    attemptEpoch: Type.Integer(),
    retryAttempt: Type.Integer({ description: '0 for the first attempt of the step, counting up per retry' }),
    isLastRetry: Type.Boolean({ description: 'No further attempt follows if this one fails' }),
    queueMetadata: FreeObject,
    queueReason: Type.String(),
    engineRunId: Type.String(),
    engineWorkflowId: Type.String(),
    createdAt: UtcDateTime,
    updatedAt: UtcDateTime,
    completedAt: Type.Optional(UtcDateTime),
    startedAt: Type.Optional(UtcDateTime),
    error: Type.Optional(ErrorRef),
    inputData: Type.Optional(FreeObject),
    outputData: Type.Optional(FreeObject),
    statusDetail: Type.Optional(FreeObject),
    logs: Type.Optional(
      Type.Object({
        cloudAccountId: Type.String(),
        logGroupName: Type.String(),
        logStreamPrefix: Type.String(),
        region: Type.String(),
      }),
    ),
  },
  { $id: 'StepExecution', title: 'StepExecution' },
);
export type StepExecution = Static<typeof StepExecution>;

export const RunListQuery = Type.Object(
  {
    ...OrderedPaginationQuery.properties,
    pipelineId: Type.Optional(Id),
    stackId: Type.Optional(Id),
    environmentId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the runs of stacks in this environment' })),
    createdById: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the runs this user (or service account) started' })),
    ref: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: "Only the runs of stacks whose code source tracks this Git branch or tag (the stack's `source.ref`)",
      }),
    ),
    commitSha: Type.Optional(
      Type.String({
        pattern: '^[0-9a-f]{4,40}$',
        description: 'Only the runs of this commit: its SHA, or the first 4 or more of its hex digits (lower case)',
      }),
    ),
    status: Type.Optional(StringEnum(RUN_STATUSES)),
  },
  { additionalProperties: false },
);
export type RunListQuery = Static<typeof RunListQuery>;

export const StepExecutionListQuery = Type.Object(
  { ...OrderedPaginationQuery.properties, attemptEpoch: Type.Optional(Type.Integer({ minimum: 1 })) },
  { additionalProperties: false },
);
export type StepExecutionListQuery = Static<typeof StepExecutionListQuery>;

export const LogLine = Type.Object({
  seq: Type.Integer({ description: 'Record number within the step execution, from 1' }),
  stream: StringEnum(LOG_STREAMS),
  line: Type.String({
    description:
      'The record as text, without its newline. When the output was valid UTF-8 without NUL bytes this is the text exactly; ' +
      'otherwise `bytes` is present and this is a visible escape of them: `\\x00` for a NUL byte, `\\xNN` for a byte that is not ' +
      'part of a valid UTF-8 character, `\\\\` for a backslash, everything else as is',
  }),
  bytes: Type.Optional(
    Type.String({
      format: 'byte',
      description: 'Base64 of the exact bytes of the record; present only when `line` is escaped (it had a NUL byte or invalid UTF-8)',
    }),
  ),
  partial: Type.Optional(
    Type.Boolean({
      description:
        'Present (true) when the record was not ended by a newline: a line longer than 16 KiB goes on in the next record of the same stream, ' +
        'or the output ended without a final newline. The exact output of a stream is its records in seq order, each followed by a newline unless partial',
    }),
  ),
  createdAt: UtcDateTime,
});
export type LogLine = Static<typeof LogLine>;

/** The largest seq a query or Last-Event-ID may name (seq is a 32-bit integer). */
export const MAX_LOG_SEQ = 2_147_483_647;

export const LogsQuery = Type.Object(
  {
    after: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: MAX_LOG_SEQ, description: 'Only lines with a greater seq' }))),
    limit: Type.Optional(
      Nullable(Type.Integer({ format: 'int32', description: 'Lines per page: default 500, at most 2000; a page also stops once it holds about 1 MiB' })),
    ),
    follow: Type.Optional(Type.Boolean({ description: 'Stream as Server-Sent Events until the step ends (same as Accept: text/event-stream)' })),
    tail: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2000,
        description: 'Only the last `tail` lines stored so far (about 1 MiB at most), oldest first; `after` and `limit` do not apply. Not with follow.',
      }),
    ),
    contains: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Only lines that hold this text, ignoring case (a search of the log). A page examines at most 100,000 lines after `after`: ' +
          '`meta.lastSeq` is the last line examined, so a page may hold no line while more are left (`complete` false). Not with follow or tail.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type LogsQuery = Static<typeof LogsQuery>;

export const LogsPage = Type.Object({
  data: Type.Array(LogLine),
  meta: Type.Object({
    limit: Type.Integer({ format: 'int32' }),
    lastSeq: Type.Integer({ description: 'The seq to pass as `after` for the next lines' }),
    complete: Type.Boolean({ description: 'The step has ended and every line is in this or an earlier page' }),
    stepStatus: StringEnum(STEP_STATUSES),
  }),
});

export const RunTransition = Type.Object(
  {
    id: Type.String(),
    pipelineRunId: Type.String(),
    stepExecutionId: Type.Optional(Type.String()),
    fromStatus: Type.Optional(StringEnum(STEP_STATUSES)),
    toStatus: StringEnum(STEP_STATUSES),
    reason: Type.String(),
    actor: Type.Optional(Type.String({ description: 'The user, service account or worker that made the change' })),
    createdAt: UtcDateTime,
  },
  { $id: 'RunTransition', title: 'RunTransition' },
);
export type RunTransition = Static<typeof RunTransition>;
