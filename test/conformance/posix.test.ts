// POSIX conformance of a FUSE Workspace against a plain directory (the control): posix.py
// asserts what the specification says of chmod, chown, link, mkdir, mkfifo, mknod, open,
// rename, rmdir, symlink, truncate, unlink and utimensat (40+ assertions each), once as root
// and once as another uid with a supplementary group, on a plain directory and on a mount
// (root's daemon, without and with the writeback cache, and an ordinary user's). An assertion that passes on the plain directory and fails on the mount fails
// this test unless known.ts lists it with its reason (docs/FUSE.md, "POSIX conformance").
// One python process per (directory, user) runs all assertions: ~2,500 in a few seconds each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commitFuse, type Backend } from '../../lib/fuse/index.js';
import { FEATURES_ENV } from '../../lib/fuse/kernel-features.js';
import { daemonPaths } from '../../lib/fuse/protocol.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { run, setupStore, withMount, type RunResult } from '../fuse/helpers.js';
import { handToUser, ordinaryUserMachine, ORDINARY } from '../fuse/user-mount.js';
import { knownDifference } from './known.js';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'posix.py');
// Debian's python3 (scripts/setup.sh); a python3 earlier on PATH may live where the other uid cannot read.
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

interface User {
  name: string;
  uid: number;
  gid: number;
  groups: number[];
}
const USERS: User[] = [
  { name: 'root', uid: 0, gid: 0, groups: [] },
  { name: 'uid 4242', uid: 4242, gid: 4242, groups: [4242, 4343] },
];

type Results = Map<string, { passed: boolean; got: string; want: string }>;

type Runner = (cmd: string, args: string[]) => Promise<RunResult>;

async function assertions(dir: string, user: User, runner: Runner = (cmd, args) => run(cmd, args, { cwd: '/' })): Promise<Results> {
  const args = [SCRIPT, dir, ...(user.uid === 0 ? [] : [String(user.uid), String(user.gid), user.groups.join(',')])];
  const r = await runner(PYTHON, args);
  assert.equal(r.code, 0, `posix.py failed in ${dir}:\n${r.stderr}`);
  const out = JSON.parse(r.stdout) as { uid: number; results: [string, boolean, string, string][] };
  assert.equal(out.uid, user.uid);
  return new Map(out.results.map(([id, passed, got, want]) => [id, { passed, got, want }]));
}

/**
 * A directory every user may traverse: it and its ancestors up to (not including) the system's
 * temporary directory, whose own mode (1777) is left alone. The temp dirs are made 0700.
 */
function openDir(path: string): string {
  mkdirSync(path, { recursive: true });
  const top = tmpdir() + sep;
  for (let p = path; p.startsWith(top); p = dirname(p)) chmodSync(p, 0o755);
  return path;
}

const tempRoot = tempDir('layerfs-conformance-');
const controls = new Map<string, Promise<Results>>();

/** The plain directory's results for a user (run once, shared by every mount). */
function control(user: User): Promise<Results> {
  if (!controls.has(user.name)) controls.set(user.name, assertions(openDir(join(tempRoot, `plain-${user.uid}`)), user));
  return controls.get(user.name)!;
}

function compare(backend: Backend, user: User, plain: Results, mount: Results, daemon = 'root daemon'): { rate: string; unexpected: string[] } {
  let passingPlain = 0;
  let passingBoth = 0;
  const unexpected: string[] = [];
  const known: string[] = [];
  for (const [id, p] of plain) {
    assert.ok(p.passed, `the plain directory fails ${id} (got ${p.got}, want ${p.want}): the assertion is wrong`);
    passingPlain++;
    const m = mount.get(id);
    if (m?.passed) {
      passingBoth++;
      continue;
    }
    const reason = knownDifference(backend, user.uid, id);
    const line = `${id}: got ${m?.got ?? 'nothing'}, want ${p.want}`;
    if (reason) known.push(`${line} (${reason})`);
    else unexpected.push(line);
  }
  for (const [id, m] of mount) if (!plain.has(id)) unexpected.push(`${id}: only on the mount: ${m.got}`);
  const rate = `${backend} (${daemon}), ${user.name}: ${passingBoth}/${passingPlain} (${((100 * passingBoth) / passingPlain).toFixed(1)} %)`;
  console.log(`conformance ${rate}`);
  for (const k of known) console.log(`  known: ${k}`);
  return { rate, unexpected };
}

// The defaults (write-only opens bypass the page cache: directwrite), with the writeback cache,
// and without directwrite.
for (const features of ['', '+writeback', '-directwrite']) {
  test(`POSIX conformance: a kernel mount${features ? ` (${features})` : ''} equals a plain directory, as root and as another uid`, async () => {
    const before = process.env[FEATURES_ENV];
    process.env[FEATURES_ENV] = features;
    const s = await setupStore(() => {}, 'layerfs-conf-');
    openDir(s.dir);
    const failures: string[] = [];
    try {
      await withMount(s, async (m) => {
        assert.equal(m.backend, 'kernel');
        for (const user of USERS) {
          const work = join(m.path, `u${user.uid}`);
          await mkdir(work);
          await chmod(work, 0o755);
          const [plain, mounted] = await Promise.all([control(user), assertions(work, user)]);
          failures.push(...compare('kernel', user, plain, mounted, `root daemon${features ? `, ${features}` : ''}`).unexpected.map((u) => `${user.name}: ${u}`));
        }
        // What the assertions left (fifos, devices, sockets, long names, hard links) commits.
        const c = await commitFuse(s.storePath, m.workspaceId);
        assert.equal(c.outcome, 'Created');
      });
    } finally {
      if (before === undefined) delete process.env[FEATURES_ENV];
      else process.env[FEATURES_ENV] = before;
    }
    assertStoreIntact(s.storePath);
    assert.deepEqual(failures, [], `differences from the plain directory:\n${failures.join('\n')}${daemonNotes(s.storePath)}`);
  });
}

/** What the daemon logged of its kernel notifications (a late one leaves the kernel's cached times), for a failure's report. */
function daemonNotes(storePath: string): string {
  const log = daemonPaths(storePath).log;
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => /invalidation/.test(l)) : [];
  return `\ndaemon log, invalidations: ${lines.length === 0 ? 'none late' : lines.slice(-5).join('\n')}`;
}

// An ordinary user's daemon (uid 4242, mounting through fusermount3 with allow_other where
// fuse.conf allows it: user-mount.ts) serves the same kernel protocol: root and the mount's own
// user meet what they meet on a plain directory.
test('POSIX conformance: an ordinary user\'s kernel mount equals a plain directory, as root and as that user', async () => {
  const s = await setupStore(() => {}, 'layerfs-conf-user-');
  const b = s.client.branch('main');
  const path = join(s.dir, 'mnt');
  mkdirSync(path);
  mkdirSync(join(s.dir, 'ns'));
  await handToUser(s, ORDINARY);
  const machine = await ordinaryUserMachine(join(s.dir, 'ns'), ORDINARY);
  const failures: string[] = [];
  try {
    const workspaceId = randomBytes(16).toString('hex');
    const m = await machine.client<{ backend: string }>('mount', s.storePath, { workspaceId, branchId: b.id, path, expectedHead: b.headCommitId, expectedBase: b.baseLayerId, rootId: b.rootId });
    assert.equal(m.backend, 'kernel');
    for (const user of USERS) {
      const work = join(path, `u${user.uid}`);
      const made = await machine.run('install', ['-d', '-m', '0755', work]);
      assert.equal(made.code, 0, made.stderr);
      const [plain, mounted] = await Promise.all([control(user), assertions(work, user, (cmd, args) => machine.run(cmd, args))]);
      failures.push(...compare('kernel', user, plain, mounted, 'ordinary user\'s daemon').unexpected.map((u) => `${user.name}: ${u}`));
    }
    const c = await machine.client<{ outcome: string }>('commit', s.storePath, { workspaceId });
    assert.equal(c.outcome, 'Created');
  } finally {
    await machine.client('stop', s.storePath).catch(() => {});
    await machine.close();
  }
  assertStoreIntact(s.storePath);
  assert.deepEqual(failures, [], `differences from the plain directory:\n${failures.join('\n')}`);
});
