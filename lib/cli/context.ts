/**
 * The CLI is stateless between invocations; the Store it works on is recorded in a small
 * context file (LAYERFS_CONTEXT overrides its location; --store overrides it per command).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LayerFsError } from '../sdk/index.js';

export interface Context {
  store: string;
}

export function contextPath(): string {
  const env = process.env.LAYERFS_CONTEXT;
  if (env) return resolve(env);
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'layerfs', 'context.json');
}

export function readContext(): Context | undefined {
  let text: string;
  try {
    text = readFileSync(contextPath(), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const c = JSON.parse(text) as Partial<Context>;
    return typeof c.store === 'string' ? { store: c.store } : undefined;
  } catch {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `the context file is not valid JSON`, { path: contextPath(), hint: 'run `layerfs context use --store PATH` again' });
  }
}

export function writeContext(c: Context): string {
  const p = contextPath();
  mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
  const tmp = `${p}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(c, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, p);
  return p;
}

export function storeFromContext(explicit?: string): string {
  if (explicit) return resolve(explicit);
  const c = readContext();
  if (!c) {
    throw new LayerFsError('ERR_NO_CONTEXT', 'no Store selected', { path: contextPath(), hint: 'run `layerfs context use --store PATH`, or pass --store PATH' });
  }
  return c.store;
}
