// module and instance: the module catalogue (definitions, their published versions) and the instances of
// its versions in environments, with an environment's module graph. A definition is named by its id, type
// or name; an instance by its id, givenId or name, within --env when given (src/cli/resolve.ts).

import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { unwrap, type ModuleDefinition, type ModuleGraph, type ModuleInstance, type ModuleVersion, type paths } from '@plinth/sdk';
import { action, collect, examples, parseDuration, parseVars, readDocument } from '../command-kit.ts';
import { confirmByName } from '../confirm.ts';
import { deleteAction } from '../deletion.ts';
import { MODULE_DEFINITION_STATUSES } from '../enums.ts';
import { CliExit, EXIT, exitCodeOfRunStatus, UsageError } from '../exit-codes.ts';
import { printList, readList, withListOptions, type ListFlags } from '../listing.ts';
import { terminalSafe, type Column } from '../output.ts';
import { explainFailure, waitOutcome } from '../run-follow.ts';
import type { Session } from '../session.ts';
import { waitThenFinish, type WaitFlags } from './runs.ts';

type Status = ModuleDefinition['status'];
type Publish = paths['/module-versions']['post']['requestBody']['content']['application/json']['data'];
type InputProperty = Publish['inputs'][number];
type ModuleOutput = NonNullable<Publish['outputs']>[number];
type Values = Record<string, unknown>;

const definitionColumns: Column<ModuleDefinition>[] = [
  ['TYPE', (d) => d.type],
  ['NAME', (d) => d.name],
  ['STATUS', (d) => d.status],
  ['LATEST', (d) => d.latestVersion],
  ['GLOBAL', (d) => (d.global ? 'yes' : '')],
  ['LATEST VERSION ID', (d) => d.latestVersionId, 'wide'],
  ['ID', (d) => d.id, 'wide'],
];
const moduleVersionColumns: Column<ModuleVersion>[] = [
  ['VERSION', (v) => v.version],
  ['REF', (v) => v.source.ref],
  ['COMMIT', (v) => v.source.commitSha.slice(0, 12)],
  ['DEPRECATED', (v) => (v.deprecated ? (v.deprecationMessage ?? 'yes') : '')],
  ['CREATED', (v) => v.createdAt],
  ['ID', (v) => v.id, 'wide'],
];
const instanceColumns = (environments: Map<string, string>): Column<ModuleInstance>[] => [
  ['GIVEN ID', (i) => i.givenId],
  ['NAME', (i) => i.name],
  ['MODULE', (i) => i.moduleType],
  ['VERSION', (i) => i.version],
  ['ENVIRONMENT', (i) => environments.get(i.environmentId) ?? i.environmentId],
  ['APPLIED', (i) => i.appliedAt],
  ['DELETING RUN', (i) => i.deletingRunId, 'wide'],
  ['STACK', (i) => i.stackId, 'wide'],
  ['ID', (i) => i.id, 'wide'],
];

function parseDefinitionStatus(value: string): Status {
  const status = value.toUpperCase();
  if (!(MODULE_DEFINITION_STATUSES as readonly string[]).includes(status))
    throw new UsageError(`--status is one of ${MODULE_DEFINITION_STATUSES.join(', ')}, not "${value}"`);
  return status as Status;
}

async function getDefinition(s: Session, id: string): Promise<ModuleDefinition> {
  return (await unwrap(s.plinth.api.GET('/module-definitions/{id}', { params: { path: { id } } }))).data;
}

async function getInstance(s: Session, id: string): Promise<ModuleInstance> {
  return (await unwrap(s.plinth.api.GET('/module-instances/{id}', { params: { path: { id } } }))).data;
}

/** The version `version` (1.2.0) of a definition; without one, its latest. */
async function versionOf(s: Session, definitionId: string, version?: string): Promise<string> {
  if (version === undefined) {
    const definition = await getDefinition(s, definitionId);
    if (!definition.latestVersionId)
      throw new UsageError(`module ${definition.type} has no published version yet (plinth module publish ${definition.type} …)`);
    return definition.latestVersionId;
  }
  for await (const v of s.plinth.paginate('/module-versions', { query: { moduleDefinitionId: definitionId, limit: 200 } }))
    if (v.version === version) return v.id;
  throw new CliExit(EXIT.NOT_FOUND, `module definition ${definitionId} has no version ${version} (plinth module versions ${definitionId})`);
}

/**
 * A version by id, or as `<definition>@<version>` (aws/vpc@1.2.0). The last @ splits: a type may hold
 * one, a version never does.
 */
async function resolveVersion(s: Session, ref: string): Promise<string> {
  const at = ref.lastIndexOf('@');
  if (at < 1) return ref;
  return versionOf(s, await s.resolve('moduleDefinition', ref.slice(0, at)), ref.slice(at + 1));
}

/** readArray reads a JSON or YAML file holding a list (inputs, outputs). */
function readArray<T>(file: string, what: string): T[] {
  const document = readDocument(file);
  if (!Array.isArray(document)) throw new UsageError(`${file} must hold a list of ${what}`);
  return document as T[];
}

function readValuesFile(file: string): Values {
  const document = readDocument(file);
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new UsageError(`${file} must hold an object of input values`);
  return document as Values;
}

function readText(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Standard input can be read once: two options naming `-` cannot both have it. */
function oneStdin(files: Record<string, string | undefined>) {
  const readers = Object.entries(files).filter(([, file]) => file === '-');
  if (readers.length > 1) throw new UsageError(`only one of ${readers.map(([flag]) => flag).join(', ')} can read standard input (-)`);
}

interface ValueFlags {
  values?: string;
  set: string[];
  unset: string[];
}

/** valueOptions gives a command --values, --set and --unset. */
function withValueOptions(command: Command, what: string): Command {
  return command
    .option('--values <file>', `${what}: a JSON or YAML object of input values by input id (- for standard input)`)
    .option(
      '--set <key=value>',
      'an input value, on top of --values (repeatable; JSON when it parses as JSON, else text: a reference is {"$ref":{"instance":"<givenId>","output":"<name>"}})',
      collect,
      [],
    )
    .option('--unset <key>', 'drop an input value, so that its default applies (repeatable)', collect, []);
}

/** The values the flags give, on top of `base` (what --values holds, else the current values); undefined when they give none. */
async function valuesOf(o: ValueFlags, base: () => Promise<Values>): Promise<Values | undefined> {
  if (o.values === undefined && o.set.length === 0 && o.unset.length === 0) return undefined;
  const start = o.values === undefined ? await base() : readValuesFile(o.values);
  const values: Values = { ...start, ...parseVars(o.set, '--set') };
  for (const key of o.unset) delete values[key];
  return values;
}

/** The subcommands of `plinth module`. */
export function definitionCommands(module: Command) {
  examples(
    withListOptions(module.command('list').description("the organization's module definitions and the global ones, newest first"))
      .addOption(
        new Option('--status <status>', `only those with this status: ${MODULE_DEFINITION_STATUSES.join(', ')} (any case)`).argParser(parseDefinitionStatus),
      )
      .option('--type <type>', 'only the one of exactly this type')
      .option('--name <name>', 'only those with exactly this name'),
    'plinth module list --status active',
  ).action(
    action(async (s: Session, o: ListFlags & { status?: Status; type?: string; name?: string }) => {
      const query = {
        ...(o.status ? { status: o.status } : {}),
        ...(o.type !== undefined ? { type: o.type } : {}),
        ...(o.name !== undefined ? { name: o.name } : {}),
      };
      printList(s, await readList(s.plinth, '/module-definitions', { query }, o), definitionColumns);
    }),
  );
  examples(module.command('get <definition>').description('a module definition, by id, type or name'), 'plinth module get aws/vpc').action(
    action(async (s: Session, ref: string) => s.out.item(await getDefinition(s, await s.resolve('moduleDefinition', ref)))),
  );
  examples(
    module
      .command('create')
      .description('a module definition, DRAFT until a version is published')
      .requiredOption('--type <type>', 'what it is, without spaces: <system>/<name> (aws/vpc) is also served by the module registry')
      .requiredOption('--name <name>')
      .option('--description <text>')
      .option('--global', 'for every organization (super-administrators only)'),
    'plinth module create --type aws/vpc --name "AWS VPC" --description "A VPC with public and private subnets"',
  ).action(
    action(async (s: Session, o: { type: string; name: string; description?: string; global?: boolean }) => {
      const data = {
        type: o.type,
        name: o.name,
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...(o.global ? { global: true } : {}),
      };
      s.out.item((await unwrap(s.plinth.api.POST('/module-definitions', { body: { data } }))).data);
    }),
  );
  examples(
    module
      .command('update <definition>')
      .description('rename or describe a module definition (its type is fixed)')
      .option('--name <name>')
      .option('--description <text>'),
    'plinth module update aws/vpc --name "AWS network"',
  ).action(
    action(async (s: Session, ref: string, o: { name?: string; description?: string }) => {
      if (o.name === undefined && o.description === undefined) throw new UsageError('give --name or --description (or both)');
      const id = await s.resolve('moduleDefinition', ref);
      const data = { ...(o.name !== undefined ? { name: o.name } : {}), ...(o.description !== undefined ? { description: o.description } : {}) };
      s.out.item((await unwrap(s.plinth.api.PATCH('/module-definitions/{id}', { params: { path: { id } }, body: { data } }))).data);
    }),
  );
  examples(
    module
      .command('delete <definition>')
      .description('delete a module definition and its versions, once no instance of it exists (asks for its type to be typed back)')
      .option('-y, --yes', 'do not ask'),
    'plinth module delete aws/vpc',
  ).action(
    deleteAction({
      noun: 'module definition',
      kind: 'moduleDefinition',
      label: async (s, id) => (await getDefinition(s, id)).type,
      remove: (s, id) => unwrap(s.plinth.api.DELETE('/module-definitions/{id}', { params: { path: { id } } })),
    }),
  );
  examples(
    module
      .command('publish <definition>')
      .description("publish a version: its ref is pinned to the commit it names now, and the module's directory there archived")
      .requiredOption('--version <version>', 'a semantic version newer than every published one')
      .requiredOption('--code-source <source>', 'the code source (Git repository) holding the module (id, givenId or name)')
      .requiredOption('--ref <ref>', 'the branch, tag or commit')
      .option('--path <path>', 'the directory of the module in the repository (default its root)')
      .requiredOption('--inputs <file>', 'its inputs: a JSON or YAML list of input properties (docs/inputs.md; [] for none; - for standard input)')
      .option('--outputs <file>', 'its outputs: a JSON or YAML list of {name, description?, sensitive?} (- for standard input)')
      .option('--changelog <text>', 'what changed')
      .option('--changelog-file <file>', 'what changed, as text from a file (- for standard input)'),
    'plinth module publish aws/vpc --version 1.2.0 --code-source infra --ref main --path modules/vpc --inputs inputs.yaml --outputs outputs.yaml --changelog-file CHANGELOG.md',
  ).action(
    action(
      async (
        s: Session,
        ref: string,
        o: { version: string; codeSource: string; ref: string; path?: string; inputs: string; outputs?: string; changelog?: string; changelogFile?: string },
      ) => {
        if (o.changelog !== undefined && o.changelogFile !== undefined) throw new UsageError('--changelog and --changelog-file exclude each other');
        oneStdin({ '--inputs': o.inputs, '--outputs': o.outputs, '--changelog-file': o.changelogFile });
        const inputs = readArray<InputProperty>(o.inputs, 'input properties');
        const outputs = o.outputs === undefined ? undefined : readArray<ModuleOutput>(o.outputs, 'outputs');
        const changelog = o.changelogFile === undefined ? o.changelog : readText(o.changelogFile);
        const data = {
          moduleDefinitionId: await s.resolve('moduleDefinition', ref),
          version: o.version,
          source: { codeSourceId: await s.resolve('codeSource', o.codeSource), ref: o.ref, ...(o.path !== undefined ? { path: o.path } : {}) },
          inputs,
          ...(outputs ? { outputs } : {}),
          ...(changelog !== undefined ? { changelog } : {}),
        };
        s.out.item((await unwrap(s.plinth.api.POST('/module-versions', { body: { data } }))).data);
      },
    ),
  );
  examples(
    withListOptions(module.command('versions <definition>').description("the definition's published versions, newest first")),
    'plinth module versions aws/vpc',
  ).action(
    action(async (s: Session, ref: string, o: ListFlags) => {
      const moduleDefinitionId = await s.resolve('moduleDefinition', ref);
      printList(s, await readList(s.plinth, '/module-versions', { query: { moduleDefinitionId } }, o), moduleVersionColumns);
    }),
  );
  examples(
    module
      .command('deprecate <module-version>')
      .description('deprecate a version, by id or as <definition>@<version>: new instances and upgrades refuse it; instances on it keep it')
      .option('--message <text>', 'why, and what to use instead'),
    'plinth module deprecate aws/vpc@1.2.0 --message "use 1.3.0: fixes the NAT routes"',
  ).action(
    action(async (s: Session, ref: string, o: { message?: string }) => {
      const id = await resolveVersion(s, ref);
      const data = o.message !== undefined ? { message: o.message } : {};
      s.out.item((await unwrap(s.plinth.api.POST('/module-versions/{id}/deprecate', { params: { path: { id } }, body: { data } }))).data);
    }),
  );
}

/** What a person wants of an instance at a glance; -o wide shows every field. */
async function instanceSummary(s: Session, instance: ModuleInstance): Promise<Record<string, unknown>> {
  return {
    givenId: instance.givenId,
    name: instance.name,
    module: instance.moduleType,
    version: instance.version,
    project: await s.names.label('project', instance.projectId),
    environment: await s.names.label('environment', instance.environmentId),
    appliedAt: instance.appliedAt,
    deletingRunId: instance.deletingRunId,
  };
}

/** An instance for people: its fields, then its inputs (value and where it came from) and its references' problems. */
async function showInstance(s: Session, instance: ModuleInstance) {
  if (!s.out.human) return s.out.item(instance);
  const { inputs, references, values: _values, ...fields } = instance;
  s.out.item(s.out.format === 'wide' ? fields : await instanceSummary(s, instance));
  if (inputs?.length) {
    s.out.stdout.write('\n');
    s.out.list(inputs, [
      ['INPUT', (i) => i.id],
      ['VALUE', (i) => (i.hidden ? '(hidden)' : typeof i.value === 'string' ? i.value : i.value === undefined ? '' : JSON.stringify(i.value))],
      ['FROM', (i) => i.source.type],
    ]);
  }
  const problems = (references ?? []).flatMap((r) => r.messages.map((m) => `${r.inputPath}: ${m.message} (${m.kind})`));
  if (problems.length) {
    s.out.stdout.write('\n');
    for (const problem of problems) s.out.stdout.write(`${s.out.paint('!', 'yellow')} ${terminalSafe(problem)}\n`);
  }
}

interface EnvFlag {
  env?: string;
}

/** The instance `ref` names, within --env when given. */
async function resolveInstance(s: Session, ref: string, o: EnvFlag): Promise<string> {
  return s.resolve('moduleInstance', ref, o.env === undefined ? undefined : await s.resolve('environment', o.env));
}

const envOption = () => new Option('--env <env>', 'look the instance up in this environment (id, givenId or name)');

/** The subcommands of `plinth instance`. */
export function instanceCommands(instance: Command) {
  examples(
    withListOptions(instance.command('list').description('module instances, newest first'))
      .option('--env <env>', 'only this environment (id, givenId or name)')
      .option('--module <definition>', 'only the instances of this definition (id, type or name)')
      .option('--name <name>', 'only those with exactly this name')
      .option('--given-id <givenId>', 'only those with this givenId'),
    'plinth instance list --env prod',
  ).action(
    action(async (s: Session, o: ListFlags & EnvFlag & { module?: string; name?: string; givenId?: string }) => {
      const query = {
        ...(o.env !== undefined ? { environmentId: await s.resolve('environment', o.env) } : {}),
        ...(o.module !== undefined ? { moduleDefinitionId: await s.resolve('moduleDefinition', o.module) } : {}),
        ...(o.name !== undefined ? { name: o.name } : {}),
        ...(o.givenId !== undefined ? { givenId: o.givenId } : {}),
      };
      const listed = await readList(s.plinth, '/module-instances', { query }, o);
      printList(s, listed, instanceColumns(await s.names.labels(listed.items, 'environment', (i) => i.environmentId)));
    }),
  );
  examples(
    instance
      .command('get <instance>')
      .description('an instance with its inputs (each value and where it comes from) and the problems of its references')
      .addOption(envOption()),
    'plinth instance get net --env prod',
  ).action(action(async (s: Session, ref: string, o: EnvFlag) => await showInstance(s, await getInstance(s, await resolveInstance(s, ref, o)))));
  examples(
    withValueOptions(
      instance
        .command('create <givenId>')
        .description('an instance of a module version in an environment, with the OpenTofu stack it owns')
        .requiredOption('--env <env>', 'its environment (id, givenId or name)')
        .requiredOption('--module <definition>', 'the module definition (id, type or name)')
        .option('--version <version>', 'the version to use (default: the latest)')
        .option('--name <name>', 'its name (default: the givenId)'),
      'its values',
    ),
    'plinth instance create net --env prod --module aws/network --set name=main --set cidr=10.1.0.0/16',
    'plinth instance create db --env prod --module aws/database --version 1.2.0 --values db.yaml --set \'vpc_id={"$ref":{"instance":"net","output":"vpc_id"}}\'',
  ).action(
    action(async (s: Session, givenId: string, o: EnvFlag & ValueFlags & { module: string; version?: string; name?: string }) => {
      const environmentId = await s.resolve('environment', o.env!);
      const moduleVersionId = await versionOf(s, await s.resolve('moduleDefinition', o.module), o.version);
      const values = (await valuesOf(o, async () => ({}))) ?? {};
      const data = { environmentId, moduleVersionId, givenId, name: o.name ?? givenId, values };
      await showInstance(s, (await unwrap(s.plinth.api.POST('/module-instances', { body: { data } }))).data);
    }),
  );
  examples(
    withValueOptions(
      instance
        .command('update <instance>')
        .description(
          'rename an instance or replace its values. The values sent are the whole set (an input left out falls back to its default): --values gives them, ' +
            '--set and --unset change them; with --set or --unset alone, the current values are read and changed',
        )
        .addOption(envOption())
        .option('--name <name>', 'its new name'),
      'its new values, the whole set',
    ),
    'plinth instance update db --env prod --set size=large',
    'plinth instance update db --env prod --values db.yaml',
  ).action(
    action(async (s: Session, ref: string, o: EnvFlag & ValueFlags & { name?: string }) => {
      const id = await resolveInstance(s, ref, o);
      const values = await valuesOf(o, async () => (await getInstance(s, id)).values);
      if (values === undefined && o.name === undefined) throw new UsageError('give --name, --values, --set or --unset');
      const data = { ...(o.name !== undefined ? { name: o.name } : {}), ...(values !== undefined ? { values } : {}) };
      await showInstance(s, (await unwrap(s.plinth.api.PATCH('/module-instances/{id}', { params: { path: { id } }, body: { data } }))).data);
    }),
  );
  examples(
    withValueOptions(
      instance
        .command('upgrade <instance>')
        .description(
          'move an instance to another version of its module. Without --values, --set or --unset its values carry over, following moved_from where ' +
            'the new version renamed inputs; --set or --unset alone change the current values as they are (so upgrade first, then update, when inputs were renamed)',
        )
        .addOption(envOption())
        .requiredOption('--version <version>', 'the version to move to (1.3.0)'),
      'its values for the new version, the whole set',
    ),
    'plinth instance upgrade db --env prod --version 1.3.0',
  ).action(
    action(async (s: Session, ref: string, o: EnvFlag & ValueFlags & { version: string }) => {
      const id = await resolveInstance(s, ref, o);
      const current = await getInstance(s, id);
      const values = await valuesOf(o, async () => current.values);
      const data = { moduleVersionId: await versionOf(s, current.moduleDefinitionId, o.version), ...(values !== undefined ? { values } : {}) };
      await showInstance(s, (await unwrap(s.plinth.api.POST('/module-instances/{id}/upgrade', { params: { path: { id } }, body: { data } }))).data);
    }),
  );
  examples(
    instance
      .command('delete <instance>')
      .description(
        'delete an instance (asks for its givenId to be typed back). One whose stack holds resources goes once its destroy run succeeds: ' +
          'the command says which run, and --wait waits for it',
      )
      .addOption(envOption())
      .option('-y, --yes', 'do not ask')
      .option('--wait', 'wait for the destroy run, and exit with what its end means')
      .option('--timeout <duration>', 'with --wait: give up after this long (exit 7)'),
    'plinth instance delete db --env prod',
    'plinth instance delete db --env prod --yes --wait --timeout 30m',
  ).action(action(deleteInstance));
  instanceDeployCommand(instance);
}

/** deleteInstance deletes at once (204) or starts the destroy run the delete waits for (202), and waits for it with --wait. */
async function deleteInstance(s: Session, ref: string, o: EnvFlag & { yes?: boolean; wait?: boolean; timeout?: string }) {
  const id = await resolveInstance(s, ref, o);
  const instance = await getInstance(s, id);
  await confirmByName(`module instance "${instance.givenId}"`, instance.givenId, o.yes);
  const answer = await s.plinth.api.DELETE('/module-instances/{id}', { params: { path: { id } } });
  if (answer.response.status === 204) return s.out.info(`deleted module instance "${instance.givenId}" (${id})`);
  const deleting = (await unwrap(Promise.resolve(answer)))?.data;
  const runId = deleting?.deletingRunId;
  if (!runId) throw new Error(`the server answered ${answer.response.status} to the delete without a destroy run`);
  s.out.info(`destroy run ${runId} started: module instance "${instance.givenId}" is deleted once it succeeds`);
  if (!o.wait) {
    if (!s.out.human) s.out.item(deleting);
    return s.out.info(`plinth run wait ${runId}, or plinth run logs ${runId} -f`);
  }
  const run = await waitOutcome(s, runId, o.timeout === undefined ? undefined : parseDuration(o.timeout));
  if (!s.out.human) s.out.item(run);
  if (run.status === 'SUCCEEDED') return s.out.info(`deleted module instance "${instance.givenId}" (${id})`);
  if (run.status === 'WAITING_FOR_APPROVAL') s.out.info(`destroy run ${runId} is waiting for approval: plinth run approve ${runId}`);
  else {
    s.out.info(`destroy run ${runId} ${run.status}: module instance "${instance.givenId}" is kept`);
    if (run.status === 'FAILED') await explainFailure(s, run, s.out.stderr);
  }
  throw new CliExit(exitCodeOfRunStatus(run.status));
}

interface DeployFlags extends WaitFlags {
  plan?: boolean;
  autoApprove?: boolean;
  description?: string;
  wait?: boolean;
  follow?: boolean;
}

function withDeployOptions(command: Command) {
  return command
    .option('--plan', 'plan only: the change pipeline up to its first approval')
    .option('--auto-approve', 'apply without waiting at the approval step')
    .option('--description <text>')
    .option('--wait', 'wait until the runs end or wait for approval, and exit with what it means')
    .option('--timeout <duration>', 'with --wait or --follow: give up after this long (exit 7)');
}

function deployBody(o: DeployFlags) {
  return {
    action: o.plan ? ('plan' as const) : ('apply' as const),
    ...(o.autoApprove ? { autoapprove: true } : {}),
    ...(o.description !== undefined ? { description: o.description } : {}),
  };
}

/** instanceDeployCommand adds `instance deploy`: a run of the instance's stack. */
function instanceDeployCommand(instance: Command) {
  examples(
    withDeployOptions(
      instance
        .command('deploy <instance>')
        .description('deploy an instance: a run of its stack with its current values and version; it waits while an instance it consumes deploys')
        .addOption(envOption())
        .option('--follow', 'like --wait, printing the logs of its steps as they are written'),
    ),
    'plinth instance deploy db --env prod --follow',
    'plinth instance deploy db --env prod --plan --wait',
  ).action(
    action(async (s: Session, ref: string, o: EnvFlag & DeployFlags) => {
      const id = await resolveInstance(s, ref, o);
      const run = (await unwrap(s.plinth.api.POST('/module-instances/{id}/deploy', { params: { path: { id } }, body: { data: deployBody(o) } }))).data;
      if (o.wait || o.follow) return waitThenFinish(s, run.id, o.follow === true, o);
      if (!s.out.human) return s.out.item(run);
      s.out.info(`run ${run.id} ${run.queueState.reason}`);
      s.out.info(`plinth run wait ${run.id}, or plinth run logs ${run.id} -f`);
    }),
  );
}

/** envDeployCommand adds `env deploy`: a run of every changed instance of the environment, in graph order. */
function envDeployCommand(env: Command) {
  examples(
    withDeployOptions(
      env
        .command('deploy <env>')
        .description('deploy every module instance of the environment whose version or values changed, producers before their consumers'),
    ),
    'plinth env deploy prod --auto-approve --wait',
  ).action(
    action(async (s: Session, ref: string, o: DeployFlags) => {
      const id = await s.resolve('environment', ref);
      const started = (await unwrap(s.plinth.api.POST('/environments/{id}/deploy', { params: { path: { id } }, body: { data: deployBody(o) } }))).data;
      if (!s.out.human && !o.wait) return s.out.document(started);
      s.out.list(started.runs, [
        ['INSTANCE', (r) => r.givenId],
        ['RUN', (r) => r.run.id],
        ['STATE', (r) => r.run.queueState.reason],
      ]);
      if (started.unchanged.length) s.out.info(`unchanged: ${started.unchanged.map((u) => u.givenId).join(', ')}`);
      if (!o.wait) return;
      const timeoutMs = o.timeout === undefined ? undefined : parseDuration(o.timeout);
      let firstBad = 0;
      for (const r of started.runs) {
        const run = await waitOutcome(s, r.run.id, timeoutMs);
        s.out.info(`${r.givenId}: run ${run.id} ${run.status}${run.error?.message ? `: ${run.error.message}` : ''}`);
        if (run.status === 'FAILED') await explainFailure(s, run, s.out.stderr);
        firstBad ||= exitCodeOfRunStatus(run.status);
      }
      if (firstBad !== 0) throw new CliExit(firstBad);
    }),
  );
}

/** envGraphCommand adds `env graph <env>`: the environment's module graph. */
export function envGraphCommand(env: Command) {
  envDeployCommand(env);
  examples(
    env
      .command('graph <env>')
      .description("the environment's module instances and the references between them (producer --output--> consumer), with their problems"),
    'plinth env graph prod',
    'plinth env graph prod -o json',
  ).action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('environment', ref);
      const graph = (await unwrap(s.plinth.api.GET('/environments/{id}/module-graph', { params: { path: { id } } }))).data;
      if (!s.out.human) return s.out.document(graph);
      await printGraph(s, graph);
    }),
  );
}

type Node = ModuleGraph['nodes'][number];

async function printGraph(s: Session, graph: ModuleGraph) {
  if (graph.nodes.length === 0) return s.out.info('no module instances in this environment');
  const environments = await s.names.labels(
    graph.nodes.filter((n) => n.kind === 'EXTERNAL_INSTANCE'),
    'environment',
    (n) => n.environmentId,
  );
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  const label = (id: string) => {
    const node = nodes.get(id);
    if (!node) return id;
    return node.kind === 'EXTERNAL_INSTANCE' ? `${node.givenId}@${environments.get(node.environmentId) ?? node.environmentId}` : node.givenId;
  };
  s.out.list(graph.nodes, [
    ['INSTANCE', (n: Node) => label(n.id)],
    ['NAME', (n) => n.name],
    ['MODULE', (n) => n.moduleType],
    ['VERSION', (n) => n.version],
    ['ID', (n) => n.id, 'wide'],
  ]);
  const warn = (text: string) => s.out.stdout.write(`    ${s.out.paint('!', 'yellow')} ${terminalSafe(text)}\n`);
  if (graph.edges.length) s.out.stdout.write('\nreferences:\n');
  for (const edge of graph.edges) {
    s.out.stdout.write(`  ${terminalSafe(label(edge.source))} --${terminalSafe(edge.consumedFields.join(','))}--> ${terminalSafe(label(edge.target))}\n`);
    for (const m of edge.messages) warn(`${m.message} (${m.kind})`);
  }
  const orphaned = graph.nodes.filter((n) => n.messages.length > 0);
  if (orphaned.length) s.out.stdout.write('\nproblems:\n');
  for (const node of orphaned) {
    s.out.stdout.write(`  ${terminalSafe(label(node.id))}\n`);
    for (const m of node.messages) warn(`${m.refInputPath}: ${m.message} (${m.kind})`);
  }
}
