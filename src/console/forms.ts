// What the console's management forms share: turning the API's refusal into a message above the form,
// and the choices their lists offer.

import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../platform/http/input-rules.ts';
import { ApiCallError, type ApiCaller } from './console-api.ts';
import type { EnvironmentChoice } from './views/stacks.tsx';

/** Statuses of a refusal the reader can mend in the form: its message goes above the form. */
const MENDABLE = new Set([400, 404, 409, 422]);
/** Choices offered in the forms' lists (the API takes any id). */
export const CHOICES = 200;

export interface FormError {
  message: string;
  details?: string[];
}

/**
 * answerForm runs a form's work. A refusal the reader can mend (the API's 400, 404, 409 or 422) is
 * answered by `refused`, with the API's message and status, to show the form again; anything else goes on.
 */
export async function answerForm<T>(work: () => Promise<T>, refused: (failure: FormError, status: number) => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ApiCallError && MENDABLE.has(error.status)) return refused({ message: error.message, details: error.details }, error.status);
    throw error;
  }
}

/**
 * A form field that holds JSON, parsed: a text too deep or not JSON is a refusal to mend. `what` names
 * the field in the message ("config"), `plural` when it names several things ("variables").
 */
export function parseJsonField(text: string, what: string, plural = false): unknown {
  if (exceedsJsonDepth(text)) {
    throw new ApiCallError(400, 'Api:Request:TOO_DEEP', `The ${what} ${plural ? 'nest' : 'nests'} deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiCallError(400, 'Api:Request:MALFORMED_JSON', `The ${what} ${plural ? 'are' : 'is'} not valid JSON`);
  }
}

/**
 * A deletion's confirmation: the reader typed what names the record (`expected`), else a refusal to
 * mend that says what to type. Checked here, on the server, so no script is needed.
 */
export function confirmTyped(typed: string, expected: string, what: string): void {
  if (typed.trim() !== expected.trim()) {
    throw new ApiCallError(400, 'Api:Request:NOT_CONFIRMED', `Type ${expected.trim()} exactly to delete ${what}`);
  }
}

/** The organization's projects, for lists and labels. */
/** The organization's members (the first CHOICES of them; beyond, ids show), by user id: their name, else their email. */
export async function peopleOf(api: ApiCaller): Promise<Record<string, string>> {
  const members = (await api.get('/memberships', { limit: CHOICES })).data as { userId?: string; email?: string; fullName?: string }[];
  return Object.fromEntries(members.filter((m) => m.userId).map((m) => [m.userId!, m.fullName || m.email || m.userId!]));
}

export async function projectChoices(api: ApiCaller): Promise<{ id: string; name: string; givenId: string }[]> {
  return (await api.get('/projects', { limit: CHOICES })).data;
}

/** The organization's environments with their projects' names, for lists and labels. */
export async function environmentChoices(api: ApiCaller): Promise<EnvironmentChoice[]> {
  const [environments, projects] = await Promise.all([api.get('/environments', { limit: CHOICES }), projectChoices(api)]);
  const projectNames = new Map<string, string>(projects.map((p) => [p.id, p.name]));
  return environments.data.map((e: { id: string; name: string; projectId: string }) => ({
    id: e.id,
    name: e.name,
    projectId: e.projectId,
    projectName: projectNames.get(e.projectId) ?? e.projectId,
  }));
}
