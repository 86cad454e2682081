// org, project, env, stack and pipeline: list (every page), get, create, and what each resource adds.

import type { Command } from 'commander';
import { unwrap, type Environment, type Organization, type Pipeline, type PipelineConfig, type PipelineVersion, type Project, type Stack } from '@plinth/sdk';
import { action, all, readDocument } from '../command-kit.ts';
import { UsageError } from '../exit-codes.ts';
import type { Column } from '../output.ts';
import type { Session } from '../session.ts';
import { stackStateCommands } from './stack-state.ts';
import { stackVarCommands } from './stack-vars.ts';

const orgColumns: Column<Organization>[] = [
  ['ID', (o) => o.id],
  ['NAME', (o) => o.name],
  ['BILLING EMAIL', (o) => o.billingEmail],
];
const projectColumns: Column<Project>[] = [
  ['ID', (p) => p.id],
  ['GIVEN ID', (p) => p.givenId],
  ['NAME', (p) => p.name],
];
const envColumns: Column<Environment>[] = [
  ['ID', (e) => e.id],
  ['GIVEN ID', (e) => e.givenId],
  ['NAME', (e) => e.name],
  ['PROJECT', (e) => e.projectId],
];
const stackColumns: Column<Stack>[] = [
  ['ID', (s) => s.id],
  ['NAME', (s) => s.name],
  ['PROJECT', (s) => s.projectId],
  ['ENVIRONMENT', (s) => s.environmentId],
  ['LATEST RUN', (s) => s.latestRunId],
  ['FIRST APPLIED', (s) => s.firstAppliedAt],
];
const pipelineColumns: Column<Pipeline>[] = [
  ['ID', (p) => p.id],
  ['NAME', (p) => p.name],
  ['PROJECT', (p) => p.projectId],
];
const versionColumns: Column<PipelineVersion>[] = [
  ['VERSION', (v) => v.version],
  ['ID', (v) => v.id],
  ['CREATED', (v) => v.createdAt],
];

export function resourceCommands(program: Command) {
  const org = program.command('org').description('organizations the key can act in');
  org
    .command('list')
    .description('organizations the caller belongs to')
    .action(
      action(async (s: Session) => {
        s.out.list(await all(s.plinth.paginate('/organizations')), orgColumns);
      }),
    );
  org.command('get <id>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.GET('/organizations/{id}', { params: { path: { id } } }))).data);
    }),
  );
  org
    .command('create')
    .description('create an organization; the caller becomes its OWNER')
    .requiredOption('--name <name>')
    .requiredOption('--billing-email <email>')
    .action(
      action(async (s: Session, o: { name: string; billingEmail: string }) => {
        s.out.item((await unwrap(s.plinth.api.POST('/organizations', { body: { data: { name: o.name, billingEmail: o.billingEmail } } }))).data);
      }),
    );

  const project = program.command('project').description("the organization's projects");
  project.command('list').action(
    action(async (s: Session) => {
      s.out.list(await all(s.plinth.paginate('/projects')), projectColumns);
    }),
  );
  project.command('get <id>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.GET('/projects/{id}', { params: { path: { id } } }))).data);
    }),
  );
  project
    .command('create')
    .requiredOption('--given-id <givenId>')
    .requiredOption('--name <name>')
    .option('--description <text>')
    .action(
      action(async (s: Session, o: { givenId: string; name: string; description?: string }) => {
        s.out.item((await unwrap(s.plinth.api.POST('/projects', { body: { data: { givenId: o.givenId, name: o.name, description: o.description } } }))).data);
      }),
    );

  const env = program.command('env').description("a project's environments");
  env
    .command('list')
    .description('environments (of --project, when one is set)')
    .action(
      action(async (s: Session) => {
        const projectId = s.settings.project;
        s.out.list(await all(s.plinth.paginate('/environments', { query: projectId ? { projectId } : {} })), envColumns);
      }),
    );
  env.command('get <id>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.GET('/environments/{id}', { params: { path: { id } } }))).data);
    }),
  );
  env
    .command('create')
    .description('an environment in --project')
    .requiredOption('--given-id <givenId>')
    .requiredOption('--name <name>')
    .action(
      action(async (s: Session, o: { givenId: string; name: string }) => {
        const body = { data: { projectId: s.requireProject(), givenId: o.givenId, name: o.name } };
        s.out.item((await unwrap(s.plinth.api.POST('/environments', { body }))).data);
      }),
    );

  stackCommands(program.command('stack').description('OpenTofu stacks'));
  pipelineCommands(program.command('pipeline').description('versioned pipelines'));
}

function stackCommands(stack: Command) {
  stack
    .command('list')
    .description('stacks (of --project, when one is set)')
    .option('--env <id>', 'only this environment')
    .action(
      action(async (s: Session, o: { env?: string }) => {
        const query = { ...(s.settings.project ? { projectId: s.settings.project } : {}), ...(o.env ? { environmentId: o.env } : {}) };
        s.out.list(await all(s.plinth.paginate('/stacks', { query })), stackColumns);
      }),
    );
  stack.command('get <id>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data);
    }),
  );
  stack
    .command('create')
    .description('a stack in --project and --env, with its change and destroy pipelines')
    .requiredOption('--env <id>', 'its environment')
    .requiredOption('--name <name>')
    .option('--given-id <givenId>')
    .option('-f, --pipelines <file>', 'JSON or YAML {change?, destroy?}: configs of the two pipelines instead of the defaults')
    .option('--code-source <id>', 'the code source (Git repository) holding its OpenTofu code')
    .option('--ref <ref>', 'the branch, tag or commit of the code source')
    .option('--path <path>', 'the directory of the root module in the repository')
    .action(
      action(async (s: Session, o: { env: string; name: string; givenId?: string; pipelines?: string; codeSource?: string; ref?: string; path?: string }) => {
        const pipelines = o.pipelines === undefined ? undefined : readDocument(o.pipelines);
        const source = {
          ...(o.codeSource ? { codeSourceId: o.codeSource } : {}),
          ...(o.ref ? { ref: o.ref } : {}),
          ...(o.path !== undefined ? { path: o.path } : {}),
        };
        if (pipelines !== undefined && (typeof pipelines !== 'object' || pipelines === null || Array.isArray(pipelines)))
          throw new UsageError('--pipelines must hold an object {change?, destroy?}');
        const data = {
          projectId: s.requireProject(),
          environmentId: o.env,
          name: o.name,
          givenId: o.givenId,
          ...(Object.keys(source).length ? { source } : {}),
          ...(pipelines ? { pipelines: pipelines as Record<string, Record<string, unknown>> } : {}),
        };
        s.out.item((await unwrap(s.plinth.api.POST('/stacks', { body: { data } }))).data);
      }),
    );
  stackVarCommands(stack);
  stackStateCommands(stack);
  stack
    .command('outputs <id>')
    .description("the stack's outputs, as its last apply left them")
    .action(
      action(async (s: Session, id: string) => {
        const output = (await unwrap(s.plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data.output ?? {};
        if (s.out.format !== 'table') return s.out.document(output);
        s.out.list(Object.entries(output), [
          ['NAME', ([k]) => k],
          ['VALUE', ([, v]) => v],
        ]);
      }),
    );
}

function pipelineCommands(pipeline: Command) {
  pipeline.command('list').action(
    action(async (s: Session) => {
      s.out.list(await all(s.plinth.paginate('/pipelines')), pipelineColumns);
    }),
  );
  pipeline.command('get <id>').action(
    action(async (s: Session, id: string) => {
      s.out.item((await unwrap(s.plinth.api.GET('/pipelines/{id}', { params: { path: { id } } }))).data);
    }),
  );
  pipeline
    .command('versions <id>')
    .description("the pipeline's versions, oldest first")
    .action(
      action(async (s: Session, id: string) => {
        s.out.list(await all(s.plinth.paginate('/pipeline-versions', { query: { pipelineId: id } })), versionColumns);
      }),
    );
  pipeline
    .command('validate <id>')
    .description('dry-run a config against the latest version: every problem, or the changes it would make')
    .requiredOption('-f, --file <file>', 'the config, JSON or YAML (- for standard input)')
    .action(
      action(async (s: Session, id: string, o: { file: string }) => {
        // The server checks the config and answers 422 listing every problem.
        const config = readDocument(o.file) as PipelineConfig;
        const result = (await unwrap(s.plinth.api.POST('/pipeline-versions', { body: { data: { pipelineId: id, config, dryRun: true } } }))).data;
        if (!('patch' in result)) throw new Error('the server created a version instead of a dry run');
        if (s.out.format !== 'table') return s.out.document(result);
        s.out.info(`valid; against version ${result.baseVersion}: ${result.patch.length} change(s)`);
        for (const op of result.patch) {
          const label = op.pathLabel ?? op.path;
          if (op.fromValue !== undefined) s.out.stdout.write(s.out.paint(`- ${label}: ${JSON.stringify(op.fromValue)}`, 'red') + '\n');
          if (op.value !== undefined) s.out.stdout.write(s.out.paint(`+ ${label}: ${JSON.stringify(op.value)}`, 'green') + '\n');
        }
      }),
    );
}
