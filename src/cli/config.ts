// Where the CLI keeps its contexts (host, organization, project) and its keys:
// $XDG_CONFIG_HOME/plinth/config.json, and credentials.json beside it, readable by its owner only.

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostOrigin } from './host.ts';

export interface Context {
  host?: string;
  organization?: string;
  project?: string;
}

export interface ConfigFile {
  current?: string;
  contexts: Record<string, Context>;
}

/** A saved API key and the origin it was saved for: the CLI sends it there and nowhere else. */
export interface SavedKey {
  /** The origin (scheme, host, port) of the login; null for a key that predates the binding and had no host to take. */
  host: string | null;
  token: string;
}

interface CredentialsFile {
  /** Key per context name. */
  keys: Record<string, SavedKey>;
  /** What credentials.json held before keys were bound to hosts: a bare token per context name. */
  tokens?: Record<string, string>;
}

export const DEFAULT_CONTEXT = 'default';

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'plinth');
}

function readJson<T>(file: string, empty: T): T {
  if (!existsSync(file)) return empty;
  try {
    return { ...empty, ...JSON.parse(readFileSync(file, 'utf8')) };
  } catch (error) {
    throw new Error(`${file} is not valid JSON (${(error as Error).message}); fix or delete it`);
  }
}

/** Written whole to a temp file created 0600 and renamed over the old one: never half a file, never readable by others. */
function writeJson(file: string, value: unknown) {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, file);
}

/** The CLI's files, at `dir` (configDir() by default). */
export class ConfigStore {
  constructor(readonly dir: string = configDir()) {}

  get configFile() {
    return path.join(this.dir, 'config.json');
  }

  get credentialsFile() {
    return path.join(this.dir, 'credentials.json');
  }

  read(): ConfigFile {
    return readJson<ConfigFile>(this.configFile, { contexts: {} });
  }

  write(config: ConfigFile) {
    writeJson(this.configFile, config);
  }

  /** updateContext merges `changes` into a context (created when missing); undefined values are left alone. */
  updateContext(name: string, changes: Context, makeCurrent = false): Context {
    const config = this.read();
    const next: Context = { ...config.contexts[name] };
    for (const [key, value] of Object.entries(changes) as [keyof Context, string | undefined][]) if (value !== undefined) next[key] = value;
    config.contexts[name] = next;
    if (makeCurrent || !config.current) config.current = name;
    this.write(config);
    return next;
  }

  /** The key saved for a context, if any. */
  key(context: string): SavedKey | undefined {
    const key = this.keys()[context];
    return typeof key?.token === 'string' ? key : undefined;
  }

  setKey(context: string, key: SavedKey | undefined) {
    const keys = this.keys();
    if (key === undefined) delete keys[context];
    else keys[context] = key;
    writeJson(this.credentialsFile, { keys } satisfies CredentialsFile);
  }

  /**
   * keys reads credentials.json, rewriting one of the older form (a bare token per context) once: each
   * token is bound to the host its context had, which is the host `plinth login` checked it against and
   * saved with it. Written back at once, so a later change of the context's host cannot carry it along.
   */
  private keys(): Record<string, SavedKey> {
    const file = readJson<CredentialsFile>(this.credentialsFile, { keys: {} });
    if (!file.tokens) return file.keys;
    const contexts = this.read().contexts;
    const keys = { ...file.keys };
    for (const [name, token] of Object.entries(file.tokens)) keys[name] ??= { host: legacyBinding(contexts[name]?.host), token };
    writeJson(this.credentialsFile, { keys } satisfies CredentialsFile);
    return keys;
  }
}

/** The origin an older token is bound to: its context's host; none (the key is refused until a new login) when that is missing or unreadable. */
function legacyBinding(host: string | undefined): string | null {
  if (host === undefined) return null;
  try {
    return hostOrigin(host);
  } catch {
    return null;
  }
}
