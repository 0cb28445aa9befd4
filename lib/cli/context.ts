/**
 * Which Store a command works on, found the way git finds `.git`: `--store`, then
 * `$LAYERFS_STORE`, then the nearest `.layerfs/store.sqlite` (or a project context file,
 * `.layerfs/context.json`) upward from the working directory, then the user-wide context file
 * (LAYERFS_CONTEXT overrides its location).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LayerFsError } from '../sdk/errors.js';

export interface Context {
  store: string;
}

/** The directory `layerfs init` makes, and the Store file in it. */
export const PROJECT_DIR = '.layerfs';
export const PROJECT_STORE = join(PROJECT_DIR, 'store.sqlite');
const PROJECT_CONTEXT = join(PROJECT_DIR, 'context.json');

export function contextPath(): string {
  const env = process.env.LAYERFS_CONTEXT;
  if (env) return resolve(env);
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'layerfs', 'context.json');
}

function readContextFile(file: string): Context | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const c = JSON.parse(text) as Partial<Context>;
    return typeof c.store === 'string' ? { store: resolve(dirname(file), c.store) } : undefined;
  } catch {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `the context file is not valid JSON`, { path: file, hint: 'run `layerfs context use --store PATH` again' });
  }
}

export function readContext(): Context | undefined {
  return readContextFile(contextPath());
}

function writeContextFile(p: string, c: Context): string {
  mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
  const tmp = `${p}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(c, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, p);
  return p;
}

export function writeContext(c: Context): string {
  return writeContextFile(contextPath(), c);
}

/** `context use --project`: the context of the project in `dir` (its `.layerfs/context.json`). */
export function writeProjectContext(dir: string, c: Context): string {
  return writeContextFile(join(resolve(dir), PROJECT_CONTEXT), c);
}

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** The nearest project Store or project context upward from `from`, with where it was found. */
export function discoverStore(from = process.cwd()): { store: string; via: string } | undefined {
  let dir = resolve(from);
  for (;;) {
    const store = join(dir, PROJECT_STORE);
    if (isFile(store)) return { store, via: store };
    const ctx = join(dir, PROJECT_CONTEXT);
    if (existsSync(ctx)) {
      const c = readContextFile(ctx);
      if (c) return { store: c.store, via: ctx };
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** The Store a command uses, and why (for `context show`). */
export function chooseStore(explicit?: string): { store: string; via: string } | undefined {
  if (explicit) return { store: resolve(explicit), via: '--store' };
  const env = process.env.LAYERFS_STORE;
  if (env) return { store: resolve(env), via: '$LAYERFS_STORE' };
  const found = discoverStore();
  if (found) return found;
  const c = readContext();
  return c ? { store: c.store, via: contextPath() } : undefined;
}

export function storeFromContext(explicit?: string): string {
  const chosen = chooseStore(explicit);
  if (!chosen) {
    throw new LayerFsError('ERR_NO_CONTEXT', 'no Store selected', {
      path: contextPath(),
      hint: 'run `layerfs init` to make one in ./.layerfs/, or `layerfs context use --store PATH`, or pass --store PATH',
    });
  }
  return chosen.store;
}
