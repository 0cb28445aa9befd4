/**
 * What every command shares: the global options, the exit code a command sets, the runner that
 * prints a command's error in human or --json form, and a Client (or, for a command that only
 * reads states, a Reader) opened for one command.
 * Command files import this module, never main.ts or each other.
 */
import type { Command } from 'commander';
import type { Client } from '../sdk/index.js';
import { Reader } from '../sdk/reader.js';
import { storeFromContext } from './context.js';
import { Out } from './output.js';

export interface Globals {
  json: boolean;
  quiet?: boolean;
  store?: string;
}

/** The process exit code a command sets (0 unless it reports an outcome or an error). */
export interface ExitState {
  code: number;
}

export type CommandBody = (out: Out, g: Globals) => Promise<void> | void;
export type Runner = (fn: CommandBody) => () => Promise<void>;

/** A runner for `program`: errors thrown by a command become its output and exit code. */
export function makeRunner(program: Command, state: ExitState): Runner {
  return (fn) => () => runBody(program.opts<Globals>(), state, fn);
}

/** Runs a command's body with the program's options `g`: an error becomes its output and exit code. */
export async function runBody(g: Globals, state: ExitState, fn: CommandBody): Promise<void> {
  const out = new Out(Boolean(g.json));
  try {
    await fn(out, g);
  } catch (e) {
    state.code = out.error(e);
  }
}

/**
 * A Client of the chosen Store for the length of `fn`, closed however `fn` ends. The SDK is loaded
 * here, on first use, so that `--version`, `--help` and the commands that only read do not load it.
 * `unless-writable`: read-only unless a writable connection would change nothing first
 * (Client.canWriteAsIs), for a command that reads but refreshes a cache when it can.
 */
export async function withClient<T>(store: string | undefined, fn: (c: Client) => Promise<T> | T, readonly: boolean | 'unless-writable' = false): Promise<T> {
  const { Client } = await import('../sdk/index.js');
  const path = storeFromContext(store);
  const c = Client.connect(path, { readonly: readonly === 'unless-writable' ? !Client.canWriteAsIs(path) : readonly });
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

/** A Reader of the chosen Store (read-only, the read path only) for the length of `fn`. */
export async function withReader<T>(store: string | undefined, fn: (r: Reader) => Promise<T> | T): Promise<T> {
  const r = Reader.open(storeFromContext(store));
  try {
    return await fn(r);
  } finally {
    r.close();
  }
}
