// A FUSE Workspace stamps file times from the wall clock, also after the wall clock steps (NTP
// correcting it, a laptop resuming: the monotonic clock stops while the machine sleeps, so a
// time counted from the daemon's start plus the monotonic clock fell behind by the whole sleep,
// and every file written after a resume looked hours old to make, rsync and watchers). The daemon
// runs under libfaketime (scripts/setup.sh), whose offset file moves the daemon's wall clock one
// hour ahead while it serves, and its monotonic clock not at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitFuse } from '../../lib/fuse/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { setupStore, withMount } from './helpers.js';

/** libfaketime's thread-safe library, wherever Debian put it for this architecture. */
function libfaketime(): string {
  for (const arch of readdirSync('/usr/lib')) {
    const lib = join('/usr/lib', arch, 'faketime', 'libfaketimeMT.so.1');
    if (existsSync(lib)) return lib;
  }
  assert.fail('libfaketime is not installed: run scripts/setup.sh (Debian package libfaketime)');
}

const HOUR_MS = 3_600_000;

test('file times follow the wall clock after it steps an hour ahead under a running daemon', async () => {
  const s = await setupStore((src) => writeFileSync(join(src, 'stored.txt'), 'stored\n'), 'layerfs-clock-');
  const offsetFile = join(s.dir, 'clock-offset');
  writeFileSync(offsetFile, '+0\n');
  const env = { LD_PRELOAD: libfaketime(), FAKETIME_TIMESTAMP_FILE: offsetFile, FAKETIME_CACHE_DURATION: '1', DONT_FAKE_MONOTONIC: '1' };
  const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  // The daemon takes the environment of the client that starts it: only it runs under libfaketime.
  Object.assign(process.env, env);
  let restored = false;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  try {
    await withMount(s, async (m) => {
      restore();
      writeFileSync(join(m.path, 'before.txt'), 'written before the step\n');
      const early = statSync(join(m.path, 'before.txt')).mtimeMs;
      assert.ok(Math.abs(early - Date.now()) < 60_000, `a new file's mtime is now: ${new Date(early).toISOString()}`);

      writeFileSync(offsetFile, '+1h\n');
      await sleep(2_500); // libfaketime reads the file again once its 1 s cache ran out
      writeFileSync(join(m.path, 'after.txt'), 'written after the step\n');
      writeFileSync(join(m.path, 'stored.txt'), 'changed after the step\n');
      const now = Date.now();
      for (const name of ['after.txt', 'stored.txt']) {
        const t = statSync(join(m.path, name));
        for (const [what, ms] of [['mtime', t.mtimeMs], ['ctime', t.ctimeMs]] as const) {
          assert.ok(Math.abs(ms - (now + HOUR_MS)) < 60_000, `${name}'s ${what} is the stepped wall clock (${new Date(now + HOUR_MS).toISOString()}), got ${new Date(ms).toISOString()}`);
        }
      }
      const c = await commitFuse(s.storePath, m.workspaceId);
      assert.equal(c.outcome, 'Created');
    });
  } finally {
    restore();
  }
  assertStoreIntact(s.storePath);
});
