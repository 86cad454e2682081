import { sql } from 'kysely';
import { newId } from '../src/platform/ids.ts';
import type { TestApp } from './helpers/app.ts';

/** plan → approve → apply: the shape of a stack's change pipeline. */
export const PLAN_APPROVE_APPLY = {
  steps: [
    { id: 'plan', name: 'Plan', type: 'script', with: { command: 'echo plan' } },
    { id: 'approve', name: 'Approve', type: 'approval', needs: ['plan'] },
    { id: 'apply', name: 'Apply', type: 'script', needs: ['approve'], with: { command: 'echo apply' }, retry: { maxAttempts: 2 } },
  ],
};

export async function createPipeline(t: TestApp, data: Record<string, unknown> = {}, headers?: Record<string, string>) {
  const res = await t.call('POST', '/pipelines', { headers, body: { data: { name: 'Deploy', config: PLAN_APPROVE_APPLY, ...data } } });
  if (res.status !== 201) throw new Error(`POST /pipelines: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; latestVersionId: string; latestVersion: number; organizationId: string };
}

/** Projects belong to the catalogue domain; the tests only need a row to point at. */
export async function insertProject(t: TestApp, organizationId: string): Promise<string> {
  const id = newId();
  await sql`insert into projects (id, organization_id, given_id, name) values (${id}, ${organizationId}, ${`p-${id}`}, 'Project')`.execute(t.db);
  return id;
}

/** A stack whose change pipeline is `pipelineId`, written straight to the engine's table. */
export async function insertStackUsing(t: TestApp, organizationId: string, pipelineId: string): Promise<string> {
  const projectId = await insertProject(t, organizationId);
  const environmentId = newId();
  await sql`insert into environments (id, organization_id, project_id, given_id, name)
            values (${environmentId}, ${organizationId}, ${projectId}, 'env', 'Env')`.execute(t.db);
  const id = newId();
  await sql`insert into stacks (id, organization_id, project_id, environment_id, name, change_pipeline_id, destroy_pipeline_id)
            values (${id}, ${organizationId}, ${projectId}, ${environmentId}, 'Stack', ${pipelineId}, ${pipelineId})`.execute(t.db);
  return id;
}

/** A run of the pipeline in the given status, written straight to the engine's table. */
export async function insertRun(t: TestApp, pipeline: { id: string; latestVersionId: string; organizationId: string }, status: string) {
  const id = newId();
  await sql`insert into pipeline_runs (id, organization_id, pipeline_id, pipeline_version_id, status)
            values (${id}, ${pipeline.organizationId}, ${pipeline.id}, ${pipeline.latestVersionId}, ${status})`.execute(t.db);
  return id;
}
