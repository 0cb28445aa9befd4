/**
 * Sandboxes in the SDK: the Client's createSandbox, sandboxStatus, stopSandbox, removeSandbox
 * and shell delegate here, and exec/execDetached of a sandboxed Workspace launch with the plan
 * made here.
 */
import { toHex } from '../format/hex.js';
import type { Store } from '../store/store.js';
import {
  attachSandbox,
  createSandbox as createSandboxRow,
  removeSandbox as removeSandboxRow,
  resolveSandbox,
  resolveWorkspace,
  sandboxOfWorkspace,
  sandboxPlan,
  sandboxStates,
  startShell,
  stopSandbox as stopSandboxRow,
  type SandboxPlan,
  type SandboxProfileInput,
  type SandboxState,
  type ShellSession,
  type ExecutionInfo,
  type WorkspaceRow,
} from '../workspace/index.js';

export interface CreateSandboxOptions {
  memoryMib?: number;
  cpus?: number;
  pidsLimit?: number;
  diskMib?: number;
  network?: 'none' | 'host';
  ro?: string[];
  rw?: string[];
}

export interface ShellOptions {
  /** The shell and its arguments; default $SHELL (else bash, else sh) with -i. */
  argv?: string[];
  env?: NodeJS.ProcessEnv;
  cols?: number;
  rows?: number;
}

export function createSandbox(store: Store, name: string, opts: CreateSandboxOptions = {}): SandboxState {
  const profile: SandboxProfileInput = { ...opts };
  return createSandboxRow(store, name, profile);
}

export function sandboxStatus(store: Store, name?: string): SandboxState[] {
  return store.read(() => sandboxStates(store, name));
}

export function stopSandbox(store: Store, name: string): Promise<{ outcome: 'Stopped' | 'AlreadyStopped'; killed: number }> {
  return stopSandboxRow(store, name);
}

export function removeSandbox(store: Store, name: string): Promise<{ outcome: 'Removed'; killed: number }> {
  return removeSandboxRow(store, name);
}

/** Checks the Sandbox exists before a Workspace is made for it. */
export function checkSandbox(store: Store, name: string | undefined): void {
  if (name !== undefined) resolveSandbox(store, name);
}

export function attachWorkspace(store: Store, workspaceId: string, name: string): void {
  const row = resolveSandbox(store, name);
  attachSandbox(store, Buffer.from(workspaceId, 'hex'), row);
}

/** The launch plan of a Workspace's executions, or undefined when it has no Sandbox. */
export function planFor(store: Store, w: WorkspaceRow): SandboxPlan | undefined {
  const row = sandboxOfWorkspace(store, w.id);
  return row ? sandboxPlan(store, row, w) : undefined;
}

/** The receipt outcome of an ended execution: the limit that ended it, else Exited or Killed. */
export function execOutcome(e: ExecutionInfo): string {
  return e.outcome ?? (e.state === 'exited' ? 'Exited' : e.state === 'killed' ? 'Killed' : 'Lost');
}

export function sandboxNameOf(store: Store, w: WorkspaceRow): string | null {
  return sandboxOfWorkspace(store, w.id)?.name ?? null;
}

/** An interactive shell on a PTY of its own in the Workspace (inside its Sandbox when it has one). */
export function openShell(store: Store, stateDir: string, ref: string, opts: ShellOptions = {}): ShellSession {
  const w = resolveWorkspace(store, ref);
  return startShell({ stateDir, workspaceId: toHex(w.id), cwd: w.path, env: opts.env, argv: opts.argv, cols: opts.cols, rows: opts.rows, sandbox: planFor(store, w) });
}
