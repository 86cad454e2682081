// What the console's management forms share: turning the API's refusal into a message above the form,
// and the choices their lists offer.

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

/** The API's refusal as a form's error, or the error itself when a form cannot mend it. */
export function formError(error: unknown): FormError {
  if (error instanceof ApiCallError && MENDABLE.has(error.status)) return { message: error.message, details: error.details };
  throw error;
}

/** The status a page with a form's error is sent with: the API's. */
export const formErrorStatus = (error: unknown) => (error instanceof ApiCallError ? error.status : 400);

/** The organization's projects, for lists and labels. */
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
