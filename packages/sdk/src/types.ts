// Names for the shapes callers handle most, taken from the generated types so they never drift.

import type { components, paths } from './generated/openapi.js';

type Schemas = components['schemas'];

/** Every error code the API documents (the `code` enum of ErrorBody in /openapi.json). */
export type ErrorCode = Schemas['ErrorBody']['code'];
/** The codes the SDK gives failures that carry no ErrorBody of the API (see PlinthApiError). */
export type SdkErrorCode = 'Sdk:Response:REDIRECT' | `Sdk:Response:HTTP_${number}` | 'Sdk:Approval:NONE_WAITING' | 'Sdk:Approval:SEVERAL_WAITING';
/**
 * What PlinthApiError.code holds: a documented code, one of the SDK's, or (from a server newer than
 * this SDK) a code neither knows. `(string & {})` keeps that last case compiling while editors still
 * complete the known codes; a `switch` on the code should keep a `default` branch.
 */
export type PlinthErrorCode = ErrorCode | SdkErrorCode | (string & {});
/** An ErrorBody as received: its code may be one this SDK does not know yet. */
export type ErrorBody = Omit<Schemas['ErrorBody'], 'code'> & { code: PlinthErrorCode };
export type Principal = Schemas['Principal'];
export type Organization = Schemas['Organization'];
export type Project = Schemas['Project'];
export type Environment = Schemas['Environment'];
export type Stack = Schemas['Stack'];
export type Pipeline = Schemas['Pipeline'];
export type PipelineVersion = Schemas['PipelineVersion'];
/** A pipeline config: its steps, each typed by its `type` with that type's `with`. */
export type PipelineConfig = Schemas['PipelineConfig'];
export type PipelineStep = PipelineConfig['steps'][number];
export type StepType = PipelineStep['type'];
export type PipelineVersionDryRun = Schemas['PipelineVersionDryRun'];
export type PipelineRun = Schemas['PipelineRun'];
export type StepExecution = Schemas['StepExecution'];
export type RunStatus = PipelineRun['status'];
export type ModuleDefinition = Schemas['ModuleDefinition'];
export type ModuleVersion = Schemas['ModuleVersion'];
export type ModuleInstance = Schemas['ModuleInstance'];
/** An environment's module instances (nodes) and the references between them (edges). */
export type ModuleGraph = Schemas['ModuleGraph'];

type LogsOk = paths['/pipeline-step-executions/{id}/logs']['get']['responses'][200]['content']['application/json'];
export type LogLine = LogsOk['data'][number];
export type LogsPage = LogsOk;

/** Run statuses after which nothing more happens to the run. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
