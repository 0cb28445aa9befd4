// FUSE passthrough (lib/fuse/kernel-passthrough.ts), on and off ($LAYERFS_FUSE_FEATURES): a
// file written in the Workspace (spilled to a spool file) and closed is read back byte for byte;
// with passthrough on its reads reach no daemon READ, a writer opening it while a read-only
// open lives gets ETXTBSY (with passthrough off it opens), and once the readers close it is
// written and read again; a reader held open across a commit keeps reading the same bytes; the
// Commit and status are the same either way. Off is also what a kernel or a daemon without
// passthrough gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { commitFuse, daemonStatus, fuseChanges } from '../../lib/fuse/index.js';
import { FEATURES_ENV } from '../../lib/fuse/kernel-features.js';
import { assertIntact } from '../helpers/integrity.js';
import { ok, setupStore, withMount, type StoreSetup } from './helpers.js';
import { fillBasic } from './scenarios.js';

const SIZE = 8 * 1024 * 1024;

/** Steps of one python3 child, each printing a JSON line; `phase` picks the part to run. */
const script = String.raw`
import errno, hashlib, json, os, sys
path, phase = sys.argv[1], sys.argv[2]
def sha(fd):
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    h = hashlib.sha256()
    off = 0
    while True:
        b = os.pread(fd, 1 << 20, off)
        if not b: break
        h.update(b); off += len(b)
    return h.hexdigest()
def try_open(flags):
    try:
        os.close(os.open(path, flags)); return 0
    except OSError as e:
        return e.errno
def try_truncate():
    try:
        os.truncate(path, 10); return 0
    except OSError as e:
        return e.errno
if phase == 'write':
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(${SIZE} // 65536):
        os.write(fd, bytes([i % 251]) * 65536)
    os.close(fd)
    print(json.dumps({}))
elif phase == 'busy':
    r = os.open(path, os.O_RDONLY)
    r2 = os.open(path, os.O_RDONLY)
    out = {'sha': sha(r), 'sha2': sha(r2), 'writer': try_open(os.O_WRONLY), 'trunc': try_open(os.O_RDONLY | os.O_TRUNC)}
    os.close(r); os.close(r2)
    print(json.dumps(out))
elif phase == 'append':
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'tail' * 1024)
    os.close(fd)
    r = os.open(path, os.O_RDONLY)
    print(json.dumps({'sha': sha(r)}))
    os.close(r)
elif phase == 'hold':
    # Opens, signals through stdout, reads again after the parent committed (stdin closes).
    r = os.open(path, os.O_RDONLY)
    first = sha(r)
    print(json.dumps({'sha': first}), flush=True)
    sys.stdin.read()
    again = os.open(path, os.O_RDONLY)
    print(json.dumps({'sha': sha(r), 'again': sha(again)}))
    os.close(again); os.close(r)
`;

function expected(tail: boolean): string {
  const h = createHash('sha256');
  for (let i = 0; i < SIZE / 65536; i++) h.update(Buffer.alloc(65536, i % 251));
  if (tail) h.update(Buffer.from('tail'.repeat(1024)));
  return h.digest('hex');
}

async function py(file: string, phase: string): Promise<Record<string, string | number>> {
  return JSON.parse((await ok('python3', ['-c', script, file, phase])).trim().split('\n').pop()!) as Record<string, string | number>;
}

async function reads(s: StoreSetup): Promise<number> {
  return (await daemonStatus(s.storePath))?.mounts[0]?.requests?.READ ?? 0;
}

/** The scenario under `spec`; returns what differs between on and off. */
async function scenario(spec: string, on: boolean): Promise<void> {
  const before = process.env[FEATURES_ENV];
  process.env[FEATURES_ENV] = spec;
  let s: StoreSetup | undefined;
  try {
    s = await setupStore(fillBasic, 'layerfs-passthrough-');
    const st = s;
    await withMount(st, async (m) => {
      const f = join(m.path, 'p.bin');
      await py(f, 'write');
      const r0 = await reads(st);
      const busy = await py(f, 'busy');
      assert.equal(busy.sha, expected(false));
      assert.equal(busy.sha2, expected(false));
      if (on) {
        assert.equal(await reads(st), r0, 'passthrough: no READ reached the daemon');
        assert.equal(busy.writer, 26, 'a writer while passthrough reads live: ETXTBSY');
        assert.equal(busy.trunc, 26, 'a truncating open too');
      } else {
        assert.ok((await reads(st)) > r0, 'READs served by the daemon');
        assert.equal(busy.writer, 0);
        assert.equal(busy.trunc, 0);
      }
      if (!on) await py(f, 'write'); // the O_TRUNC open above emptied it
      assert.equal((await py(f, 'append')).sha, expected(true), 'written after the readers closed, read again');
      // A reader held open across a commit (the spool goes; its bytes stay).
      const child = (await import('node:child_process')).spawn('python3', ['-c', script, f, 'hold'], { stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      while (!out.includes('\n')) await new Promise((r) => setTimeout(r, 20));
      assert.equal(JSON.parse(out.split('\n')[0]!).sha, expected(true));
      const c = await commitFuse(st.storePath, m.workspaceId);
      assert.equal(c.outcome, 'Created');
      child.stdin.end();
      await new Promise((r) => child.on('close', r));
      const held = JSON.parse(out.trim().split('\n').pop()!) as Record<string, string>;
      assert.equal(held.sha, expected(true), 'the held reader after the commit');
      assert.equal(held.again, expected(true), 'a new reader while the held one lives');
      assert.deepEqual((await fuseChanges(st.storePath, m.workspaceId)).changes, [], 'nothing left to commit');
    });
    assertIntact(s.client);
  } finally {
    s?.client.close();
    if (before === undefined) delete process.env[FEATURES_ENV];
    else process.env[FEATURES_ENV] = before;
  }
}

test('passthrough on: written files are read by the kernel itself; writers wait for readers (ETXTBSY)', { timeout: 300_000 }, async () => {
  await scenario('+passthrough', true);
});

test('passthrough off: the same files read through the daemon; writers open beside readers', { timeout: 300_000 }, async () => {
  await scenario('-passthrough', false);
});
