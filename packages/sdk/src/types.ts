// Names for the shapes callers handle most, taken from the generated types so they never drift.

import type { components, paths } from './generated/openapi.js';

type Schemas = components['schemas'];
export type ErrorBody = Schemas['ErrorBody'];
export type Principal = Schemas['Principal'];
export type Organization = Schemas['Organization'];
export type Project = Schemas['Project'];
export type Environment = Schemas['Environment'];
export type Stack = Schemas['Stack'];
export type Pipeline = Schemas['Pipeline'];
export type PipelineVersion = Schemas['PipelineVersion'];
export type PipelineVersionDryRun = Schemas['PipelineVersionDryRun'];
export type PipelineRun = Schemas['PipelineRun'];
export type StepExecution = Schemas['StepExecution'];
export type RunStatus = PipelineRun['status'];

type LogsOk = paths['/pipeline-step-executions/{id}/logs']['get']['responses'][200]['content']['application/json'];
export type LogLine = LogsOk['data'][number];
export type LogsPage = LogsOk;

/** Run statuses after which nothing more happens to the run. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
