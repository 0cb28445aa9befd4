/**
 * Sandboxes, for real: bubblewrap and cgroups on this machine. Every escape attempt runs inside
 * a Sandbox and, as its positive control, outside, so a probe cannot pass where the action was
 * impossible anyway.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync, chownSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client, LayerFsError } from '../../lib/sdk/index.js';
import { FORMAT_VERSION } from '../../lib/store/schema.js';
import { asFormat } from '../helpers/formats.js';
import { tempDir } from '../helpers/tmp.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { assertIntact } from '../helpers/integrity.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const PROBE = join(root, 'test/helpers/sandbox-probe.py');
const PY = '/usr/bin/python3';

interface World {
  dir: string;
  store: string;
  client: Client;
}

function world(): World {
  const dir = tempDir('layerfs-sandbox-');
  chmodSync(dir, 0o755);
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'hello.txt'), 'hello\n');
  const store = join(dir, 's.sqlite');
  const client = Client.create(store);
  return { dir, store, client };
}

async function seed(w: World, branch: string): Promise<void> {
  await w.client.initLayerStack({ name: `${branch}-stack`, source: join(w.dir, 'src') });
  w.client.forkBranch({ name: branch, layer: `${branch}-stack` });
}

/** Ends every Workspace and removes every Sandbox, so no cgroup outlives the test. */
async function cleanup(w: World): Promise<void> {
  for (const ws of w.client.workspaces()) await w.client.endWorkspace(ws.id, { discard: true });
  for (const s of w.client.sandboxStatus()) await w.client.removeSandbox(s.name);
  if (await w.client.daemonStatus()) await w.client.stopDaemon({ discard: true });
  assertIntact(w.client);
  w.client.close();
}

/** Processes in these cgroups and their children. */
function processesIn(dirs: string[]): number[] {
  const out: number[] = [];
  for (const d of new Set(dirs)) {
    if (!existsSync(d)) continue;
    out.push(...readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number));
    const subs = readdirSync(d, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(d, e.name));
    out.push(...processesIn(subs));
  }
  return out;
}

function hostAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return null;
}

function listen(): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer((c) => c.end());
    s.listen(0, '0.0.0.0', () => resolve(s));
  });
}

test('escape attempts fail inside a Sandbox with the expected errno, and succeed outside', async () => {
  const w = world();
  await seed(w, 'main');
  // A setuid-root copy of python in a directory both sides see (read-only inside).
  const suidDir = join(w.dir, 'suid');
  mkdirSync(suidDir, { mode: 0o755 });
  chmodSync(suidDir, 0o755);
  copyFileSync('/usr/bin/python3.11', join(suidDir, 'py'));
  chmodSync(join(suidDir, 'py'), 0o4755);
  const outsideTarget = join(suidDir, 'target');
  writeFileSync(outsideTarget, '');
  chownSync(outsideTarget, 4321, 4321);

  w.client.createSandbox('jail', { memoryMib: 512, pidsLimit: 256, ro: [suidDir] });
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'jail' });
  const other = await w.client.createWorkspace('main', { at: join(w.dir, 'other'), projection: 'materialize' });
  // The daemon's socket is real: a FUSE Workspace starts the Store's daemon.
  const fuse = await w.client.createWorkspace('main', { at: join(w.dir, 'mnt'), projection: 'fuse' });
  const socket = `${w.store}.d/daemon.sock`;
  assert.ok(existsSync(socket), 'the daemon listens');
  const server = await listen();
  const port = (server.address() as { port: number }).port;
  try {
    const spec = (inside: boolean) => ({
      home: '/root',
      store: w.store,
      otherWorkspace: other.path,
      socket,
      hostPid: process.pid,
      tcpPort: port,
      tcpExternal: hostAddress(),
      suid: join(suidDir, 'py'),
      suidPrefix: inside ? [] : ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'],
      chownTarget: inside ? join(ws.path, 'hello.txt') : outsideTarget,
    });
    const outsideOut = join(w.dir, 'outside.json');
    const r = spawnSync(PY, [PROBE, JSON.stringify(spec(false)), outsideOut], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const outside = JSON.parse(readFileSync(outsideOut, 'utf8')) as Record<string, string>;
    for (const [k, v] of Object.entries(outside)) assert.equal(v, 'ok', `positive control ${k} outside the Sandbox: ${v}`);

    chownSync(join(ws.path, 'hello.txt'), 4321, 4321);
    // The probe's source is passed on the command line: a checkout under /tmp is not visible in
    // the Sandbox, which has a /tmp of its own.
    const e = await w.client.exec(ws.id, [PY, '-c', readFileSync(PROBE, 'utf8'), JSON.stringify(spec(true)), join(ws.path, 'inside.json')]);
    assert.equal(e.exitCode, 0);
    assert.equal(e.sandbox, 'jail');
    const inside = JSON.parse(readFileSync(join(ws.path, 'inside.json'), 'utf8')) as Record<string, string>;
    const expected: Record<string, string> = {
      write_home: 'EACCES',
      write_etc: 'EROFS',
      write_store: 'EACCES',
      read_store: 'EACCES',
      read_other_workspace: 'EACCES',
      daemon_socket: 'EACCES',
      signal_host_process: 'ESRCH',
      see_host_process: 'ENOENT',
      tcp_loopback: 'ECONNREFUSED',
      setuid_chmod: 'EPERM',
      read_shadow: 'EACCES',
    };
    if (spec(true).tcpExternal) expected.tcp_external = 'ENETUNREACH';
    assert.deepEqual(inside, expected);
    // The Workspace itself is writable at its own path, and what was written is there outside.
    assert.ok(existsSync(join(ws.path, 'inside.json')));
    void fuse;
  } finally {
    server.close();
    await cleanup(w);
  }
});

test('inside: private /tmp, own PID/UTS namespaces, no capabilities, no new privileges; --rw and --network host are honoured', async () => {
  const w = world();
  await seed(w, 'main');
  const shared = join(w.dir, 'shared');
  mkdirSync(shared);
  writeFileSync('/tmp/layerfs-host-tmp-marker', String(process.pid));
  w.client.createSandbox('box', { rw: [shared] });
  w.client.createSandbox('net', { network: 'host' });
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'box' });
  const ws2 = await w.client.createWorkspace('main', { at: join(w.dir, 'ws2'), projection: 'materialize', sandbox: 'net' });
  const server = await listen();
  try {
    const script = [
      'ls /tmp/layerfs-host-tmp-marker 2>/dev/null && echo tmp-shared > report || echo tmp-private > report',
      'echo "pid1=$(cat /proc/1/comm)" >> report',
      'echo "host=$(hostname)" >> report',
      'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status >> report',
      `echo written > ${shared}/from-inside`,
    ].join('; ');
    const e = await w.client.exec(ws.id, ['sh', '-c', script]);
    assert.equal(e.exitCode, 0);
    const report = readFileSync(join(ws.path, 'report'), 'utf8');
    assert.match(report, /tmp-private/);
    assert.match(report, /pid1=bwrap/);
    assert.match(report, /host=sandbox/);
    assert.match(report, /CapEff:\s+0{16}/);
    assert.match(report, /CapBnd:\s+0{16}/);
    assert.match(report, /NoNewPrivs:\s+1/);
    assert.equal(readFileSync(join(shared, 'from-inside'), 'utf8'), 'written\n');
    const port = (server.address() as { port: number }).port;
    const n = await w.client.exec(ws2.id, [PY, '-c', `import socket; socket.create_connection(("127.0.0.1", ${port}), timeout=3).close(); open("net-ok", "w").close()`]);
    assert.equal(n.exitCode, 0);
    assert.ok(existsSync(join(ws2.path, 'net-ok')));
  } finally {
    server.close();
    await cleanup(w);
  }
});

test('limits: a memory hog ends OutOfMemory, a fork bomb stops at the PID limit; receipts carry the resource use', async () => {
  const w = world();
  await seed(w, 'main');
  w.client.createSandbox('small', { memoryMib: 128, pidsLimit: 40 });
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'small' });
  try {
    const hog = await w.client.exec(ws.id, [PY, '-c', 'a = []\nwhile True: a.append(bytearray(1 << 20))']);
    assert.equal(hog.outcome, 'OutOfMemory');
    assert.ok(hog.resources!.oomKills >= 1);
    assert.ok(hog.resources!.peakMemoryBytes! <= 128 * 1024 * 1024 + 4096, `peak ${hog.resources!.peakMemoryBytes}`);
    assert.ok(hog.resources!.peakMemoryBytes! > 64 * 1024 * 1024, `peak ${hog.resources!.peakMemoryBytes}`);
    const receipt = w.client.monitor.receipts().at(-1) as unknown as { operation: string; outcome: string; resources: { oomKills: number } };
    assert.equal(receipt.operation, 'workspace.exec');
    assert.equal(receipt.outcome, 'OutOfMemory');
    assert.ok(receipt.resources.oomKills >= 1);

    const bomb = await w.client.exec(ws.id, ['bash', '-c', 'exec 2>/dev/null; b() { b | b & }; b; sleep 1; exit 0']);
    assert.ok(bomb.resources!.pidsLimitHits > 0, 'forks were refused');
    assert.ok(bomb.resources!.peakPids! <= 41, `peak pids ${bomb.resources!.peakPids}`);
    // An execution has ended only when its tasks have: none of the bomb's may go on holding the
    // Sandbox's PID limit against the next one (21 of 40 did when the command returned). Each of
    // the two executions may leave one charge for a moment (cgroup.ts drainSet).
    assert.deepEqual(processesIn(w.client.sandboxStatus('small')[0]!.cgroups), [], 'processes of the bomb left');
    const use = w.client.sandboxStatus('small')[0]!.use!;
    assert.ok(use.pids! <= 2, `tasks of the bomb still charged: ${JSON.stringify(use)}`);

    const ok = await w.client.exec(ws.id, ['sh', '-c', 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done']);
    assert.equal(ok.exitCode, 0);
    assert.equal(ok.outcome, undefined);
    const r = ok.resources!;
    assert.ok(r.cpuMs! > 0 && r.wallMs >= 0 && r.peakPids! >= 1 && r.peakMemoryBytes! > 0, JSON.stringify(r));
    assert.equal(r.oomKills, 0);

    // Detached executions get the same accounting, from their supervisor.
    const d = w.client.execDetached(ws.id, [PY, '-c', 'a = []\nwhile True: a.append(bytearray(1 << 20))']);
    const end = await w.client.executionOutput(d.id, { follow: true, write: () => undefined });
    assert.equal(end.outcome, 'OutOfMemory');
    assert.equal(end.sandbox, 'small');
  } finally {
    await cleanup(w);
  }
});

test('a commit while a sandboxed execution runs is Busy; sandbox stop kills it', async () => {
  const w = world();
  await seed(w, 'main');
  w.client.createSandbox('busy');
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'busy' });
  try {
    const d = w.client.execDetached(ws.id, ['sh', '-c', 'echo started > started; sleep 60']);
    for (let i = 0; i < 200 && !existsSync(join(ws.path, 'started')); i++) await new Promise((r) => setTimeout(r, 25));
    const c = await w.client.commitWorkspace(ws.id);
    assert.equal(c.outcome, 'Busy');
    const st = w.client.sandboxStatus('busy')[0]!;
    assert.equal(st.state, 'ready');
    assert.ok(st.use!.pids! >= 2, JSON.stringify(st.use));
    const stop = await w.client.stopSandbox('busy');
    assert.equal(stop.outcome, 'Stopped');
    assert.ok(stop.killed >= 1);
    const end = await w.client.executionOutput(d.id, { follow: true, write: () => undefined });
    assert.equal(end.state, 'killed');
    assert.equal(w.client.sandboxStatus('busy')[0]!.state, 'stopped');
    for (const dir of st.cgroups) assert.equal(existsSync(dir), false, `${dir} removed`);
    // The next execution makes the cgroup again.
    const again = await w.client.exec(ws.id, ['true']);
    assert.equal(again.exitCode, 0);
    assert.equal((await w.client.commitWorkspace(ws.id)).outcome, 'Created');
  } finally {
    await cleanup(w);
  }
});

test('disk cap: many files past --disk-mib end DiskLimit (the watch kills it), so does one large file (RLIMIT_FSIZE)', async () => {
  const w = world();
  await seed(w, 'main');
  w.client.createSandbox('disk', { diskMib: 16 });
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'disk' });
  try {
    const many = await w.client.exec(ws.id, [PY, '-c', 'import time\ni = 0\nwhile True:\n    open("f%d" % i, "wb").write(b"x" * (1 << 20)); i += 1; time.sleep(0.005)']);
    assert.equal(many.outcome, 'DiskLimit');
    assert.equal(many.signal, 'SIGKILL');
    assert.ok(many.resources!.peakDiskBytes! > 16 * 1024 * 1024);
    const du = spawnSync('du', ['-s', '--block-size=1', ws.path], { encoding: 'utf8' });
    // The watch looks every 250 ms; a writer this fast cannot get far past the cap in that time.
    assert.ok(Number(du.stdout.split('\t')[0]) < 200 * 1024 * 1024, du.stdout);
    spawnSync('sh', ['-c', `rm -f ${ws.path}/f*`]);
    const big = await w.client.exec(ws.id, ['sh', '-c', 'head -c 40000000 /dev/zero > big']);
    assert.equal(big.outcome, 'DiskLimit');
    assert.ok(readFileSync(join(ws.path, 'big')).length <= 16 * 1024 * 1024);
    // The cap is on the Workspace's whole use, so make room first.
    spawnSync('rm', [join(ws.path, 'big')]);
    const small = await w.client.exec(ws.id, ['sh', '-c', 'head -c 1000000 /dev/zero > small']);
    assert.equal(small.exitCode, 0);
    assert.equal(small.outcome, undefined);
  } finally {
    await cleanup(w);
  }
});

test('a FUSE Workspace runs in its Sandbox too: writes land in the mount, a commit takes them, and is Busy while a command runs', async () => {
  const w = world();
  await seed(w, 'main');
  w.client.createSandbox('fuse');
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'mnt'), projection: 'fuse', sandbox: 'fuse' });
  try {
    const e = await w.client.exec(ws.id, ['sh', '-c', 'cat hello.txt > copy.txt && echo inside >> copy.txt']);
    assert.equal(e.exitCode, 0);
    const d = w.client.execDetached(ws.id, ['sleep', '30']);
    assert.equal((await w.client.commitWorkspace(ws.id)).outcome, 'Busy');
    await w.client.stopExecution(d.id, { graceMs: 0 });
    const c = await w.client.commitWorkspace(ws.id);
    assert.equal(c.outcome, 'Created');
    assert.equal(w.client.cat('main', 'copy.txt').toString(), 'hello\ninside\n');
  } finally {
    await cleanup(w);
  }
});

test('profiles: validated, unique, persisted; remove is refused while a Workspace uses it', async () => {
  const w = world();
  await seed(w, 'main');
  try {
    const bad = (opts: object, code: string) => assert.throws(() => w.client.createSandbox('x', opts as never), (e: unknown) => e instanceof LayerFsError && e.code === code);
    bad({ memoryMib: -1 }, 'ERR_INVALID_ARGUMENT');
    bad({ cpus: 0 }, 'ERR_INVALID_ARGUMENT');
    bad({ pidsLimit: 1.5 }, 'ERR_INVALID_ARGUMENT');
    bad({ network: 'bridge' }, 'ERR_INVALID_ARGUMENT');
    bad({ ro: ['relative/path'] }, 'ERR_INVALID_ARGUMENT');
    assert.throws(() => w.client.createSandbox('Bad Name'), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_INVALID_NAME');
    assert.deepEqual(w.client.sandboxStatus(), []);

    const s = w.client.createSandbox('keep', { memoryMib: 300, cpus: 1.5, pidsLimit: 99, network: 'none' });
    assert.deepEqual(s.profile, { memoryMib: 300, cpus: 1.5, pidsLimit: 99, diskMib: null, network: 'none', ro: [], rw: [] });
    assert.equal(readFileSync(join(s.cgroups[0]!, s.cgroupVersion === 1 ? 'memory.limit_in_bytes' : 'memory.max'), 'utf8').trim(), String(300 * 1024 * 1024));
    assert.throws(() => w.client.createSandbox('keep'), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_NAME_TAKEN');
    await assert.rejects(w.client.createWorkspace('main', { at: join(w.dir, 'nope'), sandbox: 'missing' }), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND');
    assert.equal(existsSync(join(w.dir, 'nope')), false);

    const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'keep' });
    assert.equal(w.client.workspace(ws.id).sandbox, 'keep');
    // Another connection sees the same profile.
    const again = Client.connect(w.store);
    try {
      assert.deepEqual(again.sandboxStatus('keep')[0]!.profile, s.profile);
    } finally {
      again.close();
    }
    await assert.rejects(w.client.removeSandbox('keep'), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_BUSY');
    await w.client.endWorkspace(ws.id, { discard: true });
    const r = await w.client.removeSandbox('keep');
    assert.equal(r.outcome, 'Removed');
    for (const dir of s.cgroups) assert.equal(existsSync(dir), false);
    assert.throws(() => w.client.sandboxStatus('keep'), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND');
  } finally {
    await cleanup(w);
  }
});

after(() => {
  spawnSync('rm', ['-f', '/tmp/layerfs-host-tmp-marker']);
});

test('an existing format-4 Store is upgraded: its Workspaces can then get Sandboxes', async () => {
  const w = world();
  await seed(w, 'main');
  w.client.close();
  const db = new Database(w.store);
  asFormat(db, 4);
  db.close();
  w.client = Client.connect(w.store);
  assert.equal(w.client.info().formatVersion, FORMAT_VERSION);
  w.client.createSandbox('late');
  const ws = await w.client.createWorkspace('main', { at: join(w.dir, 'ws'), projection: 'materialize', sandbox: 'late' });
  assert.equal((await w.client.exec(ws.id, ['true'])).exitCode, 0);
  await cleanup(w);
});

test('an ordinary user gets ERR_SANDBOX_UNAVAILABLE naming the missing piece where it cannot have a cgroup, and nothing is recorded', () => {
  const dir = tempDir('layerfs-sandbox-user-');
  chmodSync(dir, 0o777);
  const store = join(dir, 's.sqlite');
  Client.create(store).close();
  for (const f of [store, `${store}.d`]) if (existsSync(f)) spawnSync('chown', ['-R', '65534:65534', f]);
  const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, ...nodeArgs('lib/cli/bin.ts', '--json', '--store', store, 'sandbox', 'create', 'mine', '--memory-mib', '64')], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, HOME: dir, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') },
  });
  const err = JSON.parse(r.stdout || r.stderr) as { error?: { code: string; missing?: string } } & { code?: string; missing?: string };
  const e = err.error ?? err;
  assert.notEqual(r.status, 0);
  assert.equal(e.code, 'ERR_SANDBOX_UNAVAILABLE', r.stdout + r.stderr);
  const cgroupV1 = readFileSync('/proc/self/mountinfo', 'utf8').includes(' - cgroup ');
  // On cgroup v1 (this machine) only root may create cgroups; the error says which hierarchy.
  if (cgroupV1) assert.match(String(e.missing), /cgroup v1 memory hierarchy/);
  // The namespaces alone would have worked rootless here: the cgroup is the one missing piece.
  const ns = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'bwrap', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-net', '--cap-drop', 'ALL', 'true'], { encoding: 'utf8' });
  assert.equal(ns.status, 0, ns.stderr);
  const c = Client.connect(store, { readonly: true });
  try {
    assert.deepEqual(c.sandboxStatus(), []);
  } finally {
    c.close();
  }
});
