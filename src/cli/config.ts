// Where the CLI keeps its contexts (host, organization, project) and its tokens:
// $XDG_CONFIG_HOME/plinth/config.json, and credentials.json beside it, readable by its owner only.

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Context {
  host?: string;
  organization?: string;
  project?: string;
}

export interface ConfigFile {
  current?: string;
  contexts: Record<string, Context>;
}

interface CredentialsFile {
  /** Token per context name. */
  tokens: Record<string, string>;
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

  token(context: string): string | undefined {
    return readJson<CredentialsFile>(this.credentialsFile, { tokens: {} }).tokens[context];
  }

  setToken(context: string, token: string | undefined) {
    const credentials = readJson<CredentialsFile>(this.credentialsFile, { tokens: {} });
    if (token === undefined) delete credentials.tokens[context];
    else credentials.tokens[context] = token;
    writeJson(this.credentialsFile, credentials);
  }
}
