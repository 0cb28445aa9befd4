/**
 * How a command starts inside a Sandbox: bubblewrap (bwrap) gives it fresh mount, PID, IPC and
 * UTS namespaces (and a network namespace unless the profile asks for the host's), drops every
 * capability and sets no_new_privs; a tiny sh wrapper first moves itself into the execution's
 * cgroup leaf and only then execs bwrap, so nothing of the command ever runs outside the
 * limits (if the move fails the wrapper exits 125 and nothing runs). docs/DECISIONS.md says why
 * bubblewrap rather than an OCI runtime.
 *
 * The view inside: / read-only; /home, /root, /run, the Store, `<store>.d` and other Workspaces
 * masked (an empty mode-000 directory or file, so reads and writes fail with EACCES, or an empty
 * directory where a visible path lies below); a private /tmp; then the profile's --ro and --rw
 * paths; then the Workspace read-write at its own path.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, existsSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve, sep } from 'node:path';
import { LayerFsError } from '../errors.js';
import { createLeaf, drainSet, procsFiles, readUsage, removeSet, type CgroupSet, type ResourceUsage } from './cgroup.js';
import type { SandboxProfile } from './sandbox-rows.js';
import { watchDisk, type DiskWatch } from './disk-watch.js';

/** What a launch needs to know besides the command. */
export interface SandboxPlan {
  name: string;
  profile: SandboxProfile;
  /** The Sandbox's cgroup (exists, limits applied). */
  cgroup: CgroupSet;
  workspace: string;
  /** Paths to hide: the Store file and its side files, `<store>.d`, other Workspaces. */
  masked: string[];
  /** An empty mode-000 file to bind over masked files. */
  maskFile: string;
}

/** What an execution record keeps of its Sandbox. */
export interface SandboxRecord {
  name: string;
  leaf: CgroupSet;
  /** The Workspace directory and the profile's disk cap, for the owner's disk watch. */
  workspace?: string;
  diskMib?: number | null;
}

export type SandboxOutcome = 'OutOfMemory' | 'PidsLimit' | 'DiskLimit';

/** Exit status the wrapper uses when it could not join the cgroup (the command never ran). */
export const CGROUP_JOIN_FAILED = 125;

const WRAPPER = 'for f do if [ "$f" = -- ]; then shift; break; fi; echo $$ > "$f" || exit 125; shift; done; exec "$@"';

/** Host files that hold credentials even though they sit among the system directories. */
const HOST_SECRETS = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers', '/etc/sudoers.d', '/etc/ssh', '/etc/ssl/private'];

let bwrapCache: string | null | undefined;

/** bwrap on PATH (or /usr/bin), or ERR_SANDBOX_UNAVAILABLE. */
export function bwrapPath(): string {
  if (bwrapCache === undefined) {
    bwrapCache = null;
    for (const d of [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/bin']) {
      if (d === '') continue;
      const p = join(d, 'bwrap');
      try {
        accessSync(p, constants.X_OK);
        bwrapCache = p;
        break;
      } catch {
        // next
      }
    }
  }
  if (bwrapCache === null) {
    throw new LayerFsError('ERR_SANDBOX_UNAVAILABLE', 'bubblewrap (bwrap) is not installed', { missing: 'bwrap', hint: 'install the Debian package bubblewrap (scripts/setup.sh does)' });
  }
  return bwrapCache;
}

/** Namespace flags every sandboxed command gets. */
function namespaceArgs(profile: SandboxProfile, tty: boolean): string[] {
  // A user namespace even for root: inside it no capability survives, not even in the bounding
  // set, and no further user namespace can be made to win some back.
  const a = ['--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--hostname', 'sandbox', '--die-with-parent'];
  if (profile.network === 'none') a.push('--unshare-net');
  // A command without a terminal of its own must not reach the caller's (TIOCSTI); a shell gets
  // a PTY of its own, whose session it leads.
  if (!tty) a.push('--new-session');
  a.push('--cap-drop', 'ALL');
  return a;
}

function under(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** The bwrap arguments up to (not including) the command. */
export function bwrapArgs(plan: SandboxPlan, cwd: string, tty: boolean): string[] {
  const visible = [plan.workspace, ...plan.profile.ro, ...plan.profile.rw];
  const a = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--tmpfs', '/var/tmp'];
  const masks = ['/home', '/root', '/run', '/var/run', ...HOST_SECRETS, ...plan.masked];
  for (const m of masks) {
    let st;
    try {
      st = lstatSync(m);
    } catch {
      continue; // nothing there to hide
    }
    if (st.isSymbolicLink()) continue; // e.g. /var/run -> /run: its target is masked itself
    if (st.isDirectory()) {
      // A directory holding a visible path must stay traversable; its contents are hidden anyway.
      if (visible.some((v) => under(v, m) && v !== m)) a.push('--tmpfs', m);
      else if (!visible.some((v) => under(m, v))) a.push('--perms', '0000', '--tmpfs', m);
    } else if (!visible.some((v) => under(m, v))) {
      a.push('--ro-bind', plan.maskFile, m);
    }
  }
  for (const p of plan.profile.ro) if (existsSync(p)) a.push('--ro-bind', p, p);
  for (const p of plan.profile.rw) if (existsSync(p)) a.push('--bind', p, p);
  a.push('--bind', plan.workspace, plan.workspace, '--chdir', cwd, ...namespaceArgs(plan.profile, tty));
  return a;
}

/** A mode-000 empty file in `dir`, bound over masked files. */
export function ensureMaskFile(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const p = join(dir, 'masked');
  if (!existsSync(p)) writeFileSync(p, '', { mode: 0 });
  chmodSync(p, 0);
  return p;
}

/** HOME inside: the caller's when it is visible, else the private /tmp. */
export function sandboxEnv(plan: SandboxPlan, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const home = env.HOME ? resolve(env.HOME) : null;
  const visible = [plan.workspace, ...plan.profile.ro, ...plan.profile.rw];
  if (home !== null && visible.some((v) => under(home, v))) return env;
  return { ...env, HOME: '/tmp' };
}

/**
 * Creates the execution's cgroup leaf and returns the argv that runs `argv` inside the Sandbox:
 * sh (joins the leaf) → bwrap → the command.
 */
export function prepareLaunch(plan: SandboxPlan, executionId: string, argv: string[], cwd: string, tty = false): { argv: string[]; record: SandboxRecord } {
  const bwrap = bwrapPath();
  const leaf = createLeaf(plan.cgroup, executionId);
  const disk = plan.profile.diskMib;
  // No single file may outgrow the disk cap between two looks of the watch (disk-watch.ts).
  const fsize = disk === null ? [] : ['prlimit', `--fsize=${disk * MIB}:${disk * MIB}`, '--'];
  const full = ['/bin/sh', '-c', WRAPPER, 'layerfs-sandbox', ...procsFiles(leaf), '--', ...fsize, bwrap, ...bwrapArgs(plan, cwd, tty), '--', ...argv];
  return { argv: full, record: { name: plan.name, leaf, workspace: plan.workspace, diskMib: disk } };
}

const MIB = 1024 * 1024;

/**
 * The sandboxed launch of a checked request (argv through the Sandbox's launcher, its
 * environment), or null without a Sandbox. The record directory is removed when it fails.
 */
export function launchOf(
  r: { sandbox: SandboxPlan | null; argv: string[]; cwd: string; env: NodeJS.ProcessEnv },
  id: string,
  dir: string,
  tty = false,
): { argv: string[]; env: NodeJS.ProcessEnv; record: SandboxRecord } | null {
  if (r.sandbox === null) return null;
  try {
    const l = prepareLaunch(r.sandbox, id, r.argv, r.cwd, tty);
    return { ...l, env: sandboxEnv(r.sandbox, r.env) };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** Starts the disk watch of a capped Sandbox's execution (null without a cap). */
export function startWatch(record: SandboxRecord): DiskWatch | null {
  if (!record.diskMib || !record.workspace) return null;
  return watchDisk(record.workspace, record.diskMib * MIB, record.leaf);
}

/**
 * Reads what the execution used and removes its leaf. `signal`/`code` tell apart a kill by the
 * OOM killer (SIGKILL, or bwrap's 128+9) from an ordinary end.
 */
export async function finishLaunch(record: SandboxRecord, code: number | null, signal: string | null, diskExceeded = false): Promise<{ resources: ResourceUsage; outcome: SandboxOutcome | null }> {
  // What the command left ends with it: its tasks would otherwise go on holding the Sandbox's
  // PID limit (a fork bomb's made the next execution's forks fail). Read after, so the CPU of
  // what was left running is counted too.
  await drainSet(record.leaf);
  const resources = readUsage(record.leaf);
  const killed = signal === 'SIGKILL' || code === 128 + 9;
  const xfsz = signal === 'SIGXFSZ' || code === 128 + 25;
  let outcome: SandboxOutcome | null = null;
  if (diskExceeded || (xfsz && record.diskMib)) outcome = 'DiskLimit';
  else if (resources.oomKills > 0 && (killed || code !== 0)) outcome = 'OutOfMemory';
  else if (resources.pidsLimitHits > 0 && code !== 0) outcome = 'PidsLimit';
  // Not awaited: the leaf may stay busy for a moment after its last process is gone (the
  // kernel releases an exited task's charge up to ~1.5 s later here), and the caller should not
  // wait for that. One that never empties is removed with its Sandbox (stop or remove).
  removeSet(record.leaf).catch(() => undefined);
  return { resources, outcome };
}

/** The exit record's sandbox fields: outcome (when a limit ended it) and resources. */
export async function sandboxExit(
  record: SandboxRecord,
  code: number | null,
  signal: string | null,
  startMs: number,
  watch: DiskWatch | null = null,
): Promise<{ outcome?: SandboxOutcome; resources: ResourceUsage & { wallMs: number; peakDiskBytes?: number } }> {
  const wallMs = Math.round(performance.now() - startMs);
  watch?.stop();
  const f = await finishLaunch(record, code, signal, watch?.exceeded ?? false);
  return { ...(f.outcome ? { outcome: f.outcome } : {}), resources: { ...f.resources, wallMs, ...(watch ? { peakDiskBytes: watch.peakBytes } : {}) } };
}

/** Checks that bwrap can create the namespaces here; ERR_SANDBOX_UNAVAILABLE with its words otherwise. */
export function probeBwrap(): void {
  const bwrap = bwrapPath();
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--cap-drop', 'ALL'];
  const r = spawnSync(bwrap, [...args, 'true'], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim();
    throw new LayerFsError('ERR_SANDBOX_UNAVAILABLE', `bubblewrap cannot create namespaces here: ${why}`, {
      missing: /user namespace|uid map|setting up uid/i.test(why) ? 'unprivileged user namespaces' : 'namespaces',
      hint: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0), or run as root',
    });
  }
}
