// org, project, env, stack and pipeline: list, get, create, delete, and what each resource adds (an
// environment's module graph is with the module commands). Every record is named by its id, givenId or
// name (src/cli/resolve.ts).

import type { Command } from 'commander';
import { unwrap, type Environment, type Organization, type Pipeline, type PipelineConfig, type PipelineVersion, type Project, type Stack } from '@plinth/sdk';
import { action, examples, readDocument } from '../command-kit.ts';
import { deleteAction } from '../deletion.ts';
import { UsageError } from '../exit-codes.ts';
import { printList, readList, withListOptions, type ListFlags } from '../listing.ts';
import type { Column } from '../output.ts';
import { resolveOrganization } from '../resolve.ts';
import type { Session } from '../session.ts';
import { envGraphCommand } from './modules.ts';
import { stackStateCommands } from './stack-state.ts';
import { stackVarCommands } from './stack-vars.ts';

type Labels = Map<string, string>;

const orgColumns: Column<Organization>[] = [
  ['NAME', (o) => o.name],
  ['BILLING EMAIL', (o) => o.billingEmail],
  ['ID', (o) => o.id, 'wide'],
];
const projectColumns: Column<Project>[] = [
  ['GIVEN ID', (p) => p.givenId],
  ['NAME', (p) => p.name],
  ['CREATED', (p) => p.createdAt],
  ['ID', (p) => p.id, 'wide'],
];
const envColumns = (projects: Labels): Column<Environment>[] => [
  ['GIVEN ID', (e) => e.givenId],
  ['NAME', (e) => e.name],
  ['PROJECT', (e) => projects.get(e.projectId) ?? e.projectId],
  ['ID', (e) => e.id, 'wide'],
];
const stackColumns = (projects: Labels, environments: Labels): Column<Stack>[] => [
  ['NAME', (s) => s.name],
  ['GIVEN ID', (s) => s.givenId],
  ['PROJECT', (s) => projects.get(s.projectId) ?? s.projectId],
  ['ENVIRONMENT', (s) => environments.get(s.environmentId) ?? s.environmentId],
  ['FIRST APPLIED', (s) => s.firstAppliedAt],
  ['LATEST RUN', (s) => s.latestRunId, 'wide'],
  ['ID', (s) => s.id, 'wide'],
];
const pipelineColumns = (projects: Labels): Column<Pipeline>[] => [
  ['NAME', (p) => p.name],
  ['GIVEN ID', (p) => p.givenId],
  ['PROJECT', (p) => (p.projectId ? (projects.get(p.projectId) ?? p.projectId) : '')],
  ['VERSION', (p) => p.latestVersion],
  ['ID', (p) => p.id, 'wide'],
];
const versionColumns: Column<PipelineVersion>[] = [
  ['VERSION', (v) => v.version],
  ['CREATED', (v) => v.createdAt],
  ['ID', (v) => v.id, 'wide'],
];

interface NameFlags {
  name?: string;
  givenId?: string;
}

/** The API's givenId and name filters, as list options. */
function withNameFilters(command: Command): Command {
  return command.option('--name <name>', 'only those with exactly this name').option('--given-id <givenId>', 'only the one with this givenId');
}

function nameQuery(o: NameFlags) {
  return { ...(o.name !== undefined ? { name: o.name } : {}), ...(o.givenId !== undefined ? { givenId: o.givenId } : {}) };
}

/** The subcommands of `plinth org`. */
export function orgCommands(org: Command) {
  withListOptions(org.command('list').description('organizations the caller belongs to')).action(
    action(async (s: Session, o: ListFlags) => printList(s, await readList(s.plinth, '/organizations', {}, o), orgColumns)),
  );
  examples(org.command('get <org>').description('an organization, by id or name'), 'plinth org get Acme').action(
    action(async (s: Session, ref: string) => {
      const id = await resolveOrganization(s.plinth, ref);
      s.out.item((await unwrap(s.plinth.api.GET('/organizations/{id}', { params: { path: { id } } }))).data);
    }),
  );
  examples(
    org
      .command('create')
      .description('create an organization; the caller becomes its OWNER')
      .requiredOption('--name <name>')
      .requiredOption('--billing-email <email>'),
    'plinth org create --name Acme --billing-email billing@acme.example',
  ).action(
    action(async (s: Session, o: { name: string; billingEmail: string }) => {
      s.out.item((await unwrap(s.plinth.api.POST('/organizations', { body: { data: { name: o.name, billingEmail: o.billingEmail } } }))).data);
    }),
  );
}

/** The subcommands of `plinth project`. */
export function projectCommands(project: Command) {
  examples(withNameFilters(withListOptions(project.command('list').description('projects, newest first'))), 'plinth project list --limit 10').action(
    action(async (s: Session, o: ListFlags & NameFlags) => printList(s, await readList(s.plinth, '/projects', { query: nameQuery(o) }, o), projectColumns)),
  );
  examples(project.command('get <project>').description('a project, by id, givenId or name'), 'plinth project get web').action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('project', ref);
      s.out.item((await unwrap(s.plinth.api.GET('/projects/{id}', { params: { path: { id } } }))).data);
    }),
  );
  examples(
    project.command('create').description('a project').requiredOption('--given-id <givenId>').requiredOption('--name <name>').option('--description <text>'),
    'plinth project create --given-id web --name "Web site"',
  ).action(
    action(async (s: Session, o: { givenId: string; name: string; description?: string }) => {
      s.out.item((await unwrap(s.plinth.api.POST('/projects', { body: { data: { givenId: o.givenId, name: o.name, description: o.description } } }))).data);
    }),
  );
  examples(
    project
      .command('delete <project>')
      .description('delete a project that nothing uses any more (asks for its givenId to be typed back)')
      .option('-y, --yes', 'do not ask'),
    'plinth project delete web',
    'plinth project delete web --yes',
  ).action(
    deleteAction({
      noun: 'project',
      kind: 'project',
      label: async (s, id) => (await unwrap(s.plinth.api.GET('/projects/{id}', { params: { path: { id } } }))).data.givenId,
      remove: (s, id) => unwrap(s.plinth.api.DELETE('/projects/{id}', { params: { path: { id } } })),
    }),
  );
}

/** The subcommands of `plinth env`. */
export function envCommands(env: Command) {
  examples(
    withNameFilters(withListOptions(env.command('list').description('environments (of --project, when one is set), newest first'))),
    'plinth env list --project web',
  ).action(
    action(async (s: Session, o: ListFlags & NameFlags) => {
      const projectId = await s.project();
      const listed = await readList(s.plinth, '/environments', { query: { ...(projectId ? { projectId } : {}), ...nameQuery(o) } }, o);
      printList(s, listed, envColumns(await s.names.labels(listed.items, 'project', (e) => e.projectId)));
    }),
  );
  examples(env.command('get <env>').description('an environment, by id, givenId or name (in --project when set)'), 'plinth env get prod --project web').action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('environment', ref);
      s.out.item((await unwrap(s.plinth.api.GET('/environments/{id}', { params: { path: { id } } }))).data);
    }),
  );
  examples(
    env.command('create').description('an environment in --project').requiredOption('--given-id <givenId>').requiredOption('--name <name>'),
    'plinth env create --project web --given-id prod --name Production',
  ).action(
    action(async (s: Session, o: { givenId: string; name: string }) => {
      const body = { data: { projectId: await s.requireProject(), givenId: o.givenId, name: o.name } };
      s.out.item((await unwrap(s.plinth.api.POST('/environments', { body }))).data);
    }),
  );
  examples(
    env.command('delete <env>').description('delete an environment without stacks (asks for its givenId to be typed back)').option('-y, --yes', 'do not ask'),
    'plinth env delete staging --project web',
  ).action(
    deleteAction({
      noun: 'environment',
      kind: 'environment',
      label: async (s, id) => (await unwrap(s.plinth.api.GET('/environments/{id}', { params: { path: { id } } }))).data.givenId,
      remove: (s, id) => unwrap(s.plinth.api.DELETE('/environments/{id}', { params: { path: { id } } })),
    }),
  );
  envGraphCommand(env);
}

/** The subcommands of `plinth stack`. */
export function stackCommands(stack: Command) {
  examples(
    withNameFilters(withListOptions(stack.command('list').description('stacks (of --project, when one is set), newest first'))).option(
      '--env <env>',
      'only this environment (id, givenId or name)',
    ),
    'plinth stack list --project web --env prod',
  ).action(
    action(async (s: Session, o: ListFlags & NameFlags & { env?: string }) => {
      const projectId = await s.project();
      const environmentId = o.env === undefined ? undefined : await s.resolve('environment', o.env);
      const query = { ...(projectId ? { projectId } : {}), ...(environmentId ? { environmentId } : {}), ...nameQuery(o) };
      const listed = await readList(s.plinth, '/stacks', { query }, o);
      const [projects, environments] = await Promise.all([
        s.names.labels(listed.items, 'project', (x) => x.projectId),
        s.names.labels(listed.items, 'environment', (x) => x.environmentId),
      ]);
      printList(s, listed, stackColumns(projects, environments));
    }),
  );
  examples(stack.command('get <stack>').description('a stack, by id, givenId or name (in --project when set)'), 'plinth stack get site').action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('stack', ref);
      s.out.item((await unwrap(s.plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data);
    }),
  );
  examples(
    stack
      .command('create')
      .description('a stack in --project and --env, with its change and destroy pipelines')
      .requiredOption('--env <env>', 'its environment (id, givenId or name)')
      .requiredOption('--name <name>')
      .option('--given-id <givenId>')
      .option('-f, --pipelines <file>', 'JSON or YAML {change?, destroy?}: configs of the two pipelines instead of the defaults')
      .option('--code-source <source>', 'the code source (Git repository) holding its OpenTofu code (id, givenId or name)')
      .option('--ref <ref>', 'the branch, tag or commit of the code source')
      .option('--path <path>', 'the directory of the root module in the repository'),
    'plinth stack create --project web --env prod --name site --code-source infra --ref main --path stacks/site',
  ).action(
    action(async (s: Session, o: { env: string; name: string; givenId?: string; pipelines?: string; codeSource?: string; ref?: string; path?: string }) => {
      const pipelines = o.pipelines === undefined ? undefined : readDocument(o.pipelines);
      if (pipelines !== undefined && (typeof pipelines !== 'object' || pipelines === null || Array.isArray(pipelines)))
        throw new UsageError('--pipelines must hold an object {change?, destroy?}');
      const source = {
        ...(o.codeSource ? { codeSourceId: await s.resolve('codeSource', o.codeSource) } : {}),
        ...(o.ref ? { ref: o.ref } : {}),
        ...(o.path !== undefined ? { path: o.path } : {}),
      };
      const data = {
        projectId: await s.requireProject(),
        environmentId: await s.resolve('environment', o.env),
        name: o.name,
        givenId: o.givenId,
        ...(Object.keys(source).length ? { source } : {}),
        ...(pipelines ? { pipelines: pipelines as Record<string, Record<string, unknown>> } : {}),
      };
      s.out.item((await unwrap(s.plinth.api.POST('/stacks', { body: { data } }))).data);
    }),
  );
  examples(
    stack
      .command('delete <stack>')
      .description('delete a stack with no unfinished run (asks for its name to be typed back; its state versions go with it)')
      .option('-y, --yes', 'do not ask'),
    'plinth stack delete site',
  ).action(
    deleteAction({
      noun: 'stack',
      kind: 'stack',
      label: async (s, id) => (await unwrap(s.plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data.name,
      remove: (s, id) => unwrap(s.plinth.api.DELETE('/stacks/{id}', { params: { path: { id } } })),
    }),
  );
  stackVarCommands(stack);
  stackStateCommands(stack);
  examples(stack.command('outputs <stack>').description("the stack's outputs, as its last apply left them"), 'plinth stack outputs site -o json').action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('stack', ref);
      const output = (await unwrap(s.plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data.output ?? {};
      if (!s.out.human) return s.out.document(output);
      s.out.list(Object.entries(output), [
        ['NAME', ([k]) => k],
        ['VALUE', ([, v]) => v],
      ]);
    }),
  );
}

/** The subcommands of `plinth pipeline`. */
export function pipelineCommands(pipeline: Command) {
  examples(
    withNameFilters(withListOptions(pipeline.command('list').description('pipelines (of --project, when one is set), newest first'))),
    'plinth pipeline list',
  ).action(
    action(async (s: Session, o: ListFlags & NameFlags) => {
      const projectId = await s.project();
      const listed = await readList(s.plinth, '/pipelines', { query: { ...(projectId ? { projectId } : {}), ...nameQuery(o) } }, o);
      printList(s, listed, pipelineColumns(await s.names.labels(listed.items, 'project', (p) => p.projectId)));
    }),
  );
  examples(pipeline.command('get <pipeline>').description('a pipeline, by id, givenId or name'), 'plinth pipeline get deploy').action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('pipeline', ref);
      s.out.item((await unwrap(s.plinth.api.GET('/pipelines/{id}', { params: { path: { id } } }))).data);
    }),
  );
  examples(
    withListOptions(pipeline.command('versions <pipeline>').description("the pipeline's versions, newest first")),
    'plinth pipeline versions deploy',
  ).action(
    action(async (s: Session, ref: string, o: ListFlags) => {
      const pipelineId = await s.resolve('pipeline', ref);
      printList(s, await readList(s.plinth, '/pipeline-versions', { query: { pipelineId } }, o), versionColumns);
    }),
  );
  examples(
    pipeline
      .command('validate <pipeline>')
      .description('dry-run a config against the latest version: every problem, or the changes it would make')
      .requiredOption('-f, --file <file>', 'the config, JSON or YAML (- for standard input)'),
    'plinth pipeline validate deploy -f pipeline.yaml',
  ).action(
    action(async (s: Session, ref: string, o: { file: string }) => {
      const config = readDocument(o.file) as PipelineConfig;
      const pipelineId = await s.resolve('pipeline', ref);
      const result = (await unwrap(s.plinth.api.POST('/pipeline-versions', { body: { data: { pipelineId, config, dryRun: true } } }))).data;
      if (!('patch' in result)) throw new Error('the server created a version instead of a dry run');
      if (!s.out.human) return s.out.document(result);
      s.out.info(`valid; against version ${result.baseVersion}: ${result.patch.length} change(s)`);
      for (const op of result.patch) {
        const label = op.pathLabel ?? op.path;
        if (op.fromValue !== undefined) s.out.stdout.write(s.out.paint(`- ${label}: ${JSON.stringify(op.fromValue)}`, 'red') + '\n');
        if (op.value !== undefined) s.out.stdout.write(s.out.paint(`+ ${label}: ${JSON.stringify(op.value)}`, 'green') + '\n');
      }
    }),
  );
}
