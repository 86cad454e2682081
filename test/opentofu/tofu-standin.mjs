#!/usr/bin/env node
// A stand-in for the OpenTofu CLI, for tests only (the real binary cannot be installed here). Plain Node,
// no dependencies, so it runs as `/usr/bin/node <this file>` inside the step sandbox. It accepts the
// commands and flags Plinth uses (init, plan -out [-destroy] [-var-file], show -json, apply <plan>,
// destroy -auto-approve, output -json), reads a tiny resource description (`standin.json` in the
// working directory), writes plans and state in OpenTofu's JSON formats (state version 4, the JSON plan
// representation), and keeps state in the real `http` backend (TF_HTTP_* variables) with LOCK/UNLOCK.
//
// standin.json: { "variables": { "<name>": { "default"?: any, "sensitive"?: bool } },
//                 "resources": { "<type>.<name>": { "attributes": {...}, "apply_ms"?: number } },
//                 "outputs": { "<name>": { "value": any, "sensitive"?: bool } } }
// Strings may hold `${var.<name>}`. The backend comes from .tf/.tf.json files as OpenTofu merges them
// (override files last), and -backend-config flags. Unlike OpenTofu, plan output prints every attribute in clear, sensitive
// or not: a careless provider, so that tests prove Plinth masks sensitive values in logs by itself.

import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const VERSION = '1.8.0-standin';
const PROVIDER = 'provider["registry.opentofu.org/plinth/standin"]';
let interrupted = false;
process.on('SIGINT', () => {
  // As OpenTofu: a second interrupt abandons whatever is in flight, and its state with it.
  if (interrupted) {
    console.log('\nTwo interrupts received. Exiting immediately. Note that data loss may have occurred.');
    process.exit(1);
  }
  interrupted = true;
  console.log('\nInterrupt received.\nPlease wait for OpenTofu to exit or data loss may occur.\nGracefully shutting down...');
});
process.on('SIGTERM', () => {
  interrupted = true;
});

function die(message) {
  console.error(`\nError: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const flags = {};
  const rest = [];
  for (const arg of argv) {
    const m = /^-{1,2}([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) rest.push(arg);
    else if (m[1] === 'backend-config') flags[m[1]] = [...(flags[m[1]] ?? []), m[2]];
    else flags[m[1]] = m[2] ?? true;
  }
  return { flags, rest };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- the backend's configuration, as OpenTofu settles it --------------------------------------------
// Primary files, then override files in name order (the last backend block wins; a .tofu file hides the
// .tf file of the same name), then -backend-config=key=value. What init settles is recorded in
// .terraform/terraform.tfstate; the TF_HTTP_* variables fill only what that leaves unset.
const HTTP_ATTRIBUTES = [
  'address',
  'update_method',
  'lock_address',
  'unlock_address',
  'lock_method',
  'unlock_method',
  'username',
  'password',
  'skip_cert_verification',
  'retry_max',
  'retry_wait_min',
  'retry_wait_max',
  'client_ca_certificate_pem',
  'client_certificate_pem',
  'client_private_key_pem',
  'headers',
];
const CONFIG_FILE = /^(.*)\.(tf|tofu)(\.json)?$/;

function configFiles() {
  const names = readdirSync('.')
    .filter((f) => CONFIG_FILE.test(f) && !f.startsWith('.'))
    .sort();
  const visible = names.filter((f) => !(f.includes('.tf') && names.includes(f.replace('.tf', '.tofu'))));
  const isOverride = (f) => /^(override|.*_override)$/.test(CONFIG_FILE.exec(f)[1]);
  return [...visible.filter((f) => !isOverride(f)), ...visible.filter(isOverride)];
}

/** The backend block of one file: { type, config } or undefined. Native syntax as far as these tests write it. */
function backendIn(file) {
  const text = readFileSync(file, 'utf8');
  if (file.endsWith('.json')) {
    const blocks = [JSON.parse(text).terraform ?? []].flat();
    for (const block of blocks) {
      const [type, config] = Object.entries(block.backend ?? {})[0] ?? [];
      if (type) return { type, config: { ...config } };
    }
    return undefined;
  }
  const m = /(?:^|[^\w-])backend\s+"?([\w-]+)"?\s*\{([^}]*)\}/.exec(text);
  if (!m) return undefined;
  return { type: m[1], config: Object.fromEntries([...m[2].matchAll(/([\w-]+)\s*=\s*"([^"]*)"/g)].map((a) => [a[1], a[2]])) };
}

function settleBackend(flags) {
  let found;
  for (const file of configFiles()) found = backendIn(file) ?? found;
  if (!found) die('no backend configuration');
  if (found.type !== 'http') die(`the stand-in speaks only the http backend, not "${found.type}"`);
  for (const pair of [flags['backend-config'] ?? []].flat()) {
    const [key, ...rest] = String(pair).split('=');
    if (!HTTP_ATTRIBUTES.includes(key)) die(`Invalid backend configuration argument: "${key}" is not expected for the selected backend type`);
    found.config[key] = rest.join('=');
  }
  return { type: found.type, config: Object.fromEntries(HTTP_ATTRIBUTES.map((k) => [k, found.config[k] ?? null])) };
}

// --- the http backend, as OpenTofu's client speaks it -----------------------------------------------
function backend() {
  if (!existsSync('.terraform/terraform.tfstate')) die('Backend initialization required, please run "tofu init"');
  const config = JSON.parse(readFileSync('.terraform/terraform.tfstate', 'utf8')).backend.config;
  const setting = (key, env) => config[key] ?? process.env[env];
  const address = setting('address', 'TF_HTTP_ADDRESS');
  if (!address) die('the http backend needs an address (TF_HTTP_ADDRESS)');
  const user = setting('username', 'TF_HTTP_USERNAME') ?? '';
  const headers = user ? { Authorization: `Basic ${Buffer.from(`${user}:${setting('password', 'TF_HTTP_PASSWORD') ?? ''}`).toString('base64')}` } : {};
  return { address, lock: setting('lock_address', 'TF_HTTP_LOCK_ADDRESS'), unlock: setting('unlock_address', 'TF_HTTP_UNLOCK_ADDRESS'), headers };
}

/** Like go-retryablehttp: connection errors, 5xx and 429 are retried. */
async function request(method, url, body) {
  const b = backend();
  for (let attempt = 0; ; attempt++) {
    try {
      const init = { method, headers: { ...b.headers } };
      if (body !== undefined) {
        init.body = body;
        init.headers['Content-Type'] = 'application/json';
        init.headers['Content-MD5'] = createHash('md5').update(body).digest('base64');
      }
      const res = await fetch(url, init);
      if ((res.status >= 500 || res.status === 429) && attempt < 4) {
        await sleep(200 * (attempt + 1));
        continue;
      }
      return { status: res.status, text: await res.text() };
    } catch (error) {
      if (attempt >= 4) die(`Failed to ${method} ${url}: ${error.message}`);
      await sleep(200 * (attempt + 1));
    }
  }
}

async function getState() {
  const res = await request('GET', backend().address);
  if (res.status === 204 || res.status === 404) return null;
  if (res.status === 401) die('HTTP remote state endpoint requires auth');
  if (res.status === 403) die('HTTP remote state endpoint invalid auth');
  if (res.status !== 200) die(`Unexpected HTTP response code ${res.status}`);
  return res.text ? JSON.parse(res.text) : null;
}

async function lock(operation, timeoutMs) {
  const b = backend();
  if (!b.lock) return undefined;
  const info = {
    ID: randomUUID(),
    Operation: operation,
    Info: '',
    Who: `${os.userInfo().username}@${os.hostname()}`,
    Version: VERSION,
    Created: new Date().toISOString(),
    Path: '',
  };
  const body = JSON.stringify(info);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await request(process.env.TF_HTTP_LOCK_METHOD || 'LOCK', b.lock, body);
    if (res.status === 200) return { id: info.ID, body };
    if (res.status === 423 || res.status === 409) {
      if (Date.now() < deadline) {
        await sleep(250);
        continue;
      }
      let holder = {};
      try {
        holder = JSON.parse(res.text);
      } catch {}
      die(
        `Error acquiring the state lock\n\nHTTP remote state already locked: ID=${holder.ID}\nLock Info:\n  ID: ${holder.ID}\n  Who: ${holder.Who}\n  Operation: ${holder.Operation}`,
      );
    }
    die(`Error acquiring the state lock: Unexpected HTTP response code ${res.status}`);
  }
}

async function unlock(held) {
  if (!held) return;
  const res = await request(process.env.TF_HTTP_UNLOCK_METHOD || 'UNLOCK', backend().unlock, held.body);
  if (res.status !== 200) die(`Error releasing the state lock: Unexpected HTTP response code ${res.status}`);
}

async function putState(state, held) {
  const url = new URL(backend().address);
  if (held) url.searchParams.set('ID', held.id);
  const res = await request('POST', url.toString(), JSON.stringify(state, null, 2));
  if (![200, 201, 204].includes(res.status)) {
    await unlock(held).catch(() => {});
    die(`Failed to save state: HTTP error: ${res.status} ${res.text}`);
  }
}

// --- configuration -----------------------------------------------------------------------------------
function readConfig() {
  if (!existsSync('standin.json')) die('No configuration files: standin.json is missing from the working directory');
  return JSON.parse(readFileSync('standin.json', 'utf8'));
}

function variableValues(config, flags) {
  const values = {};
  for (const [name, v] of Object.entries(config.variables ?? {})) if (v.default !== undefined) values[name] = v.default;
  for (const [key, value] of Object.entries(process.env)) if (key.startsWith('TF_VAR_')) values[key.slice(7)] = value;
  if (typeof flags['var-file'] === 'string') {
    for (const [name, value] of Object.entries(JSON.parse(readFileSync(flags['var-file'], 'utf8')))) {
      if (!(name in (config.variables ?? {}))) console.log(`\nWarning: Value for undeclared variable "${name}"\n`);
      else values[name] = value;
    }
  }
  for (const name of Object.keys(config.variables ?? {})) if (!(name in values)) die(`No value for required variable "${name}"`);
  return values;
}

function interpolate(value, vars) {
  if (typeof value === 'string')
    return value.replace(/\$\{var\.([A-Za-z0-9_]+)\}/g, (_, n) => (typeof vars[n] === 'string' ? vars[n] : JSON.stringify(vars[n])));
  if (Array.isArray(value)) return value.map((v) => interpolate(v, vars));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, vars)]));
  return value;
}

function stateResources(state) {
  const map = {};
  for (const r of state?.resources ?? []) map[`${r.type}.${r.name}`] = r.instances[0].attributes;
  return map;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Variables declared sensitive: in standin.json, or by a `variable "<name>" { sensitive = true }` block of a .tf file. */
function sensitiveVariables(config) {
  const names = new Set(
    Object.entries(config.variables ?? {})
      .filter(([, v]) => v.sensitive)
      .map(([n]) => n),
  );
  for (const file of configFiles().filter((f) => !f.endsWith('.json'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/variable\s+"([\w-]+)"\s*\{\s*sensitive\s*=\s*true\s*\}/g)) names.add(m[1]);
  }
  return names;
}

/** As OpenTofu marks them in a plan: the attributes of a resource set from a sensitive variable, as { name: true }. */
function sensitiveAttributes(config, addr) {
  const sensitive = sensitiveVariables(config);
  const marks = {};
  for (const [name, value] of Object.entries(config.resources?.[addr]?.attributes ?? {})) {
    const used = [...JSON.stringify(value).matchAll(/\$\{var\.([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);
    if (used.some((v) => sensitive.has(v))) marks[name] = true;
  }
  return marks;
}

/** As OpenTofu: a root output that shows a sensitive variable must say `sensitive: true` itself. */
function checkOutputs(config) {
  const sensitive = sensitiveVariables(config);
  for (const [name, o] of Object.entries(config.outputs ?? {})) {
    const used = [...JSON.stringify(o.value ?? null).matchAll(/\$\{var\.([\w-]+)\}/g)].map((m) => m[1]);
    if (!o.sensitive && used.some((v) => sensitive.has(v))) {
      die(
        `Output refers to sensitive values\n\n  on outputs.tf, in output "${name}":\n\nTo reduce the risk of accidentally exporting sensitive data that was intended to be only internal, OpenTofu requires that any root module output containing sensitive data be explicitly marked as sensitive, to confirm your intent.`,
      );
    }
  }
}

function makePlan(config, vars, state, destroy) {
  checkOutputs(config);
  const current = stateResources(state);
  const desired = destroy ? {} : Object.fromEntries(Object.entries(config.resources ?? {}).map(([addr, r]) => [addr, interpolate(r.attributes ?? {}, vars)]));
  const changes = [];
  for (const addr of new Set([...Object.keys(current), ...Object.keys(desired)])) {
    const before = current[addr] ?? null;
    const { id, ...beforeAttrs } = before ?? {};
    const after = desired[addr] ?? null;
    const actions = !before ? ['create'] : !after ? ['delete'] : same(beforeAttrs, after) ? ['no-op'] : ['update'];
    changes.push({
      address: addr,
      actions,
      before,
      after: after && before ? { ...after, id } : after,
      sensitive: sensitiveAttributes(config, addr),
      applyMs: config.resources?.[addr]?.apply_ms ?? 0,
    });
  }
  const outputs = destroy
    ? {}
    : Object.fromEntries(Object.entries(config.outputs ?? {}).map(([n, o]) => [n, { value: interpolate(o.value, vars), sensitive: Boolean(o.sensitive) }]));
  const outputChanges = {};
  for (const name of new Set([...Object.keys(state?.outputs ?? {}), ...Object.keys(outputs)])) {
    const before = state?.outputs?.[name]?.value ?? null;
    const after = outputs[name]?.value ?? null;
    outputChanges[name] = {
      actions: [before === null ? 'create' : after === null ? 'delete' : same(before, after) ? 'no-op' : 'update'],
      before,
      after,
      after_sensitive: Boolean(outputs[name]?.sensitive),
    };
  }
  return { standin_plan: 1, destroy, prior: state ? { serial: state.serial, lineage: state.lineage } : null, changes, outputs, outputChanges };
}

// As OpenTofu prints a multi-line string: a heredoc, a line at a time and re-indented. Anything else as JSON.
function attributeLine(sign, key, value) {
  if (typeof value !== 'string' || !value.includes('\n')) return `      ${sign} ${key} = ${JSON.stringify(value)}`;
  return [
    `      ${sign} ${key} = <<-EOT`,
    ...value
      .trim()
      .split('\n')
      .map((line) => `            ${line}`),
    '        EOT',
  ].join('\n');
}

function printPlan(plan) {
  const counts = { add: 0, change: 0, destroy: 0 };
  console.log('\nOpenTofu used the selected providers to generate the following execution plan.\n');
  for (const c of plan.changes) {
    if (c.actions[0] === 'no-op') continue;
    const sign = { create: '+', delete: '-', update: '~' }[c.actions[0]];
    counts[{ create: 'add', delete: 'destroy', update: 'change' }[c.actions[0]]]++;
    const [type, name] = c.address.split('.');
    console.log(`  # ${c.address} will be ${{ create: 'created', delete: 'destroyed', update: 'updated in-place' }[c.actions[0]]}`);
    console.log(`  ${sign} resource "${type}" "${name}" {`);
    for (const [k, v] of Object.entries(c.after ?? c.before ?? {})) console.log(attributeLine(sign, k, v));
    console.log('    }');
  }
  const total = counts.add + counts.change + counts.destroy;
  if (total === 0 && Object.values(plan.outputChanges).every((o) => o.actions[0] === 'no-op'))
    console.log('No changes. Your infrastructure matches the configuration.');
  else console.log(`Plan: ${counts.add} to add, ${counts.change} to change, ${counts.destroy} to destroy.`);
}

function showJson(plan) {
  return {
    format_version: '1.2',
    terraform_version: VERSION,
    resource_changes: plan.changes.map((c) => {
      const [type, name] = c.address.split('.');
      return {
        address: c.address,
        mode: 'managed',
        type,
        name,
        provider_name: 'registry.opentofu.org/plinth/standin',
        change: {
          actions: c.actions,
          before: c.before,
          after: c.after,
          before_sensitive: c.before ? c.sensitive : false,
          after_sensitive: c.after ? c.sensitive : false,
          // The stand-in knows every value at plan time but the id of what it creates.
          after_unknown: c.actions[0] === 'create' ? { id: true } : {},
        },
      };
    }),
    output_changes: plan.outputChanges,
    planned_values: { outputs: Object.fromEntries(Object.entries(plan.outputs).map(([n, o]) => [n, { value: o.value, sensitive: o.sensitive }])) },
  };
}

async function applyPlan(plan, state, held) {
  if (!same(plan.prior, state ? { serial: state.serial, lineage: state.lineage } : null)) {
    await unlock(held);
    die('Saved plan is stale\n\nThe given plan file can no longer be applied because the state was changed by another operation after the plan was created.');
  }
  const resources = stateResources(state);
  const done = { add: 0, change: 0, destroy: 0 };
  let complete = true;
  for (const c of plan.changes) {
    if (c.actions[0] === 'no-op') continue;
    if (interrupted) {
      complete = false;
      break;
    }
    console.log(`${c.address}: ${{ create: 'Creating', delete: 'Destroying', update: 'Modifying' }[c.actions[0]]}...`);
    await sleep(c.applyMs);
    if (c.actions[0] === 'delete') {
      delete resources[c.address];
      done.destroy++;
    } else {
      resources[c.address] = { ...c.after, id: c.after.id ?? `${c.address}-${randomUUID().slice(0, 8)}` };
      done[c.actions[0] === 'create' ? 'add' : 'change']++;
    }
    console.log(`${c.address}: ${c.actions[0] === 'delete' ? 'Destruction' : c.actions[0] === 'create' ? 'Creation' : 'Modifications'} complete`);
  }
  const next = {
    version: 4,
    terraform_version: VERSION,
    serial: (state?.serial ?? 0) + 1,
    lineage: state?.lineage ?? randomUUID(),
    outputs: complete
      ? Object.fromEntries(
          Object.entries(plan.outputs).map(([n, o]) => [
            n,
            { value: o.value, type: typeof o.value === 'string' ? 'string' : 'dynamic', ...(o.sensitive ? { sensitive: true } : {}) },
          ]),
        )
      : (state?.outputs ?? {}),
    resources: Object.entries(resources).map(([addr, attributes]) => {
      const [type, name] = addr.split('.');
      return { mode: 'managed', type, name, provider: PROVIDER, instances: [{ schema_version: 0, attributes, sensitive_attributes: [] }] };
    }),
    check_results: null,
  };
  await putState(next, held);
  await unlock(held);
  if (!complete) die('operation canceled');
  console.log(`\nApply complete! Resources: ${done.add} added, ${done.change} changed, ${done.destroy} destroyed.`);
}

function lockTimeout(flags) {
  const m = /^(\d+)(ms|s|m)?$/.exec(String(flags['lock-timeout'] ?? '0s'));
  return m ? Number(m[1]) * { ms: 1, s: 1000, m: 60000 }[m[2] ?? 's'] : 0;
}

async function main() {
  const [command, ...args] = process.argv.slice(2);
  const { flags, rest } = parseArgs(args);
  switch (command) {
    case 'version':
      console.log(`OpenTofu v${VERSION}`);
      return;
    case 'init': {
      readConfig();
      const settled = settleBackend(flags);
      const saved = existsSync('.terraform/terraform.tfstate') ? JSON.parse(readFileSync('.terraform/terraform.tfstate', 'utf8')) : undefined;
      if (saved && !flags.reconfigure && JSON.stringify(saved.backend) !== JSON.stringify({ ...settled, hash: 1 }))
        die('Backend configuration changed: run init with -reconfigure or -migrate-state');
      mkdirSync('.terraform', { recursive: true });
      writeFileSync('.terraform/terraform.tfstate', JSON.stringify({ version: 3, terraform_version: VERSION, backend: { ...settled, hash: 1 } }));
      await getState();
      writeFileSync('.terraform/standin-initialized', VERSION);
      console.log(
        '\nInitializing the backend...\n\nSuccessfully configured the backend "http"! OpenTofu will automatically\nuse this backend unless the backend configuration changes.\n\nOpenTofu has been successfully initialized!',
      );
      return;
    }
    case 'plan': {
      if (!existsSync('.terraform/standin-initialized')) die('Backend initialization required, please run "tofu init"');
      const config = readConfig();
      const vars = variableValues(config, flags);
      const held = await lock('OperationTypePlan', lockTimeout(flags));
      const state = await getState();
      const plan = makePlan(config, vars, state, Boolean(flags.destroy));
      await unlock(held);
      printPlan(plan);
      if (typeof flags.out === 'string') writeFileSync(flags.out, JSON.stringify(plan));
      if (interrupted) die('operation canceled');
      return;
    }
    case 'show': {
      if (!flags.json || !rest[0]) die('show needs -json and a plan file');
      process.stdout.write(JSON.stringify(showJson(JSON.parse(readFileSync(rest[0], 'utf8')))));
      return;
    }
    case 'apply': {
      if (!existsSync('.terraform/standin-initialized')) die('Backend initialization required, please run "tofu init"');
      if (!rest[0]) die('the stand-in applies saved plans only');
      const plan = JSON.parse(readFileSync(rest[0], 'utf8'));
      if (plan.standin_plan !== 1) die('Failed to load the plan file');
      const held = await lock('OperationTypeApply', lockTimeout(flags));
      await applyPlan(plan, await getState(), held);
      return;
    }
    case 'destroy': {
      if (!flags['auto-approve']) die('destroy needs -auto-approve without a terminal');
      const config = readConfig();
      const vars = variableValues(config, flags);
      const held = await lock('OperationTypeApply', lockTimeout(flags));
      const state = await getState();
      const plan = makePlan(config, vars, state, true);
      printPlan(plan);
      await applyPlan(plan, state, held);
      return;
    }
    case 'output': {
      const state = await getState();
      const outputs = Object.fromEntries(
        Object.entries(state?.outputs ?? {}).map(([n, o]) => [n, { sensitive: Boolean(o.sensitive), type: o.type, value: o.value }]),
      );
      process.stdout.write(
        flags.json
          ? JSON.stringify(outputs)
          : Object.entries(outputs)
              .map(([n, o]) => `${n} = ${o.sensitive ? '<sensitive>' : JSON.stringify(o.value)}`)
              .join('\n') + '\n',
      );
      return;
    }
    default:
      die(`unknown command ${command}`);
  }
}

main().catch((error) => die(error.stack ?? String(error)));
