// An ordinary user's FUSE Workspaces, for real: the daemon runs as uid 4242 and mounts through
// the setuid fusermount3. This machine's /dev/fuse is 0600 and its /etc/fuse.conf has no
// user_allow_other, so each case runs in a private mount namespace (made by a root keeper
// process) in which /dev/fuse is a 0666 node of the same device and fuse.conf allows
// allow_other, and /etc/passwd names the user (fusermount wants a name): what a stock Debian
// with `user_allow_other` looks like, and nothing of the
// machine's own configuration changes. Everything that touches the mounts runs inside that
// namespace (nsenter); when the keeper and the daemon are gone, the namespace and whatever is
// still mounted in it go with them.
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run, type RunResult, type StoreSetup } from './helpers.js';

export interface UserIds {
  uid: number;
  gid: number;
  groups?: number[];
}

export const ORDINARY: UserIds = { uid: 4242, gid: 4242 };

const CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'user-client.ts');
const TSX = fileURLToPath(import.meta.resolve('tsx'));

export interface UserMachine {
  /** The keeper's pid: /proc/<pid>/ns/mnt is the namespace. */
  pid: number;
  user: UserIds;
  /** Runs a program in the namespace, as root or as `as` (HOME=/tmp, plus `env`). */
  run(cmd: string, args: string[], as?: UserIds, env?: Record<string, string>): Promise<RunResult>;
  /** One FUSE client call made by the ordinary user (user-client.ts); throws its typed error. */
  client<T = Record<string, unknown>>(op: 'mount' | 'commit' | 'unmount' | 'status' | 'stop', storePath: string, args?: Record<string, unknown>): Promise<T>;
  /** FUSE mount points of the namespace. */
  fuseMounts(): Promise<string[]>;
  close(): Promise<void>;
}

function asUser(as: UserIds | undefined, cmd: string, args: string[]): string[] {
  if (!as) return [cmd, ...args];
  const groups = as.groups?.length ? ['--groups', as.groups.join(',')] : ['--clear-groups'];
  return ['setpriv', '--reuid', String(as.uid), '--regid', String(as.gid), ...groups, '--', cmd, ...args];
}

/**
 * Hands a Store made by root to `user`: the connection closed (no WAL files left to root), the
 * directory chowned, its ancestors up to the temporary directory made traversable.
 */
export async function handToUser(s: StoreSetup, user: UserIds = ORDINARY): Promise<void> {
  s.client.close();
  const r = await run('chown', ['-R', `${user.uid}:${user.gid}`, s.dir]);
  if (r.code !== 0) throw new Error(r.stderr);
  const top = tmpdir() + sep;
  for (let p = s.dir; p.startsWith(top); p = dirname(p)) await run('chmod', ['0755', p]);
}

/** Starts the namespace; `scratch` is an empty directory for its tmpfs. */
export async function ordinaryUserMachine(scratch: string, user: UserIds = ORDINARY): Promise<UserMachine> {
  const dev = statSync('/dev/fuse').rdev;
  const [major, minor] = [Math.floor(dev / 256) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00)];
  const script = [
    'set -e',
    `mount -t tmpfs -o mode=0755 layerfs-test "$1"`,
    `mknod -m 0666 "$1/fuse" c ${major} ${minor}`,
    'mount --bind "$1/fuse" /dev/fuse',
    `printf 'user_allow_other\\n' > "$1/fuse.conf"`,
    'mount --bind "$1/fuse.conf" /etc/fuse.conf',
    // fusermount records the mount under the user's name: the user needs a passwd entry.
    'cp /etc/passwd "$1/passwd"',
    `printf 'layerfs-test:x:${user.uid}:${user.gid}::/tmp:/usr/sbin/nologin\\n' >> "$1/passwd"`,
    'mount --bind "$1/passwd" /etc/passwd',
    // Copies of other FUSE mounts would keep their connections alive after their daemons
    // unmount them in the machine's namespace: detached here at once.
    "grep ' - fuse' /proc/self/mountinfo | cut -d' ' -f5 | while read -r m; do umount -l \"$m\" || true; done",
    'echo ready',
    'exec cat >/dev/null',
  ].join('\n');
  const keeper: ChildProcess = spawn('unshare', ['--mount', '--propagation', 'private', '/bin/sh', '-c', script, 'keeper', scratch], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  keeper.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  await new Promise<void>((resolve, reject) => {
    keeper.stdout!.setEncoding('utf8').on('data', (d: string) => d.includes('ready') && resolve());
    keeper.on('exit', (code) => reject(new Error(`the namespace keeper exited ${code}: ${err}`)));
  });
  const ns = `--mount=/proc/${keeper.pid}/ns/mnt`;
  const inside = (cmd: string, args: string[], as?: UserIds, env: Record<string, string> = {}) => run('nsenter', [ns, '--', ...asUser(as, cmd, args)], { cwd: '/', env: { ...process.env, HOME: '/tmp', ...env } });
  return {
    pid: keeper.pid!,
    user,
    run: inside,
    async client<T>(op: string, storePath: string, args: Record<string, unknown> = {}): Promise<T> {
      const r = await inside(process.execPath, ['--import', TSX, CLIENT, op, storePath, JSON.stringify(args)], user);
      const line = r.stdout.trim().split('\n').pop() ?? '';
      if (r.code !== 0 || !line.startsWith('{')) throw new Error(`user-client ${op} exited ${r.code}: ${r.stdout}${r.stderr}`);
      const out = JSON.parse(line) as { result?: T; error?: { code?: string; message: string } };
      if (out.error) throw Object.assign(new Error(out.error.message), out.error);
      return out.result as T;
    },
    async fuseMounts(): Promise<string[]> {
      const r = await inside('cat', ['/proc/self/mountinfo']);
      return r.stdout
        .split('\n')
        .map((l) => l.split(' '))
        .filter((f) => f[f.indexOf('-') + 1]?.startsWith('fuse'))
        .map((f) => f[4]!);
    },
    async close(): Promise<void> {
      keeper.stdin!.end();
      if (keeper.exitCode === null) await new Promise((r) => keeper.once('exit', r));
    },
  };
}
