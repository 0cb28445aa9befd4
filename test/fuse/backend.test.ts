// The fuse-native backend is gone: every mount is served over /dev/fuse by the daemon itself.
// Asking for it, in a mount request or through $LAYERFS_FUSE_BACKEND (read by the daemon, which
// inherits the environment of the client that starts it), is refused with a typed error that
// says what to do, and nothing is mounted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { isLayerFsError } from '../../lib/errors.js';
import { stopDaemon, type Backend } from '../../lib/fuse/index.js';
import { mountTable } from '../../lib/fuse/mounttab.js';
import { mountBranch, setupStore, withMount } from './helpers.js';
import { fillBasic } from './scenarios.js';

const refused = (name: string) => (e: unknown) =>
  isLayerFsError(e, 'ERR_INVALID_ARGUMENT') && /fuse-native backend was removed/.test((e as Error).message) && (e as { details: { name?: string } }).details.name === name && typeof (e as { details: { hint?: string } }).details.hint === 'string';

test("a mount request for backend 'fuse-native' is refused with ERR_INVALID_ARGUMENT; 'kernel' mounts", async () => {
  const s = await setupStore(fillBasic, 'layerfs-backend-');
  try {
    await assert.rejects(mountBranch(s, { name: 'old', backend: 'fuse-native' as Backend }), refused('backend'));
    assert.deepEqual(readdirSync(`${s.dir}/old`), [], 'nothing was mounted there');
    assert.ok(!(await mountTable()).has(`${s.dir}/old`));
    await withMount(s, async (m) => assert.equal(m.backend, 'kernel'), { backend: 'kernel' });
  } finally {
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
  }
});

test('LAYERFS_FUSE_BACKEND=fuse-native is refused with a hint naming the variable', async () => {
  const before = process.env.LAYERFS_FUSE_BACKEND;
  process.env.LAYERFS_FUSE_BACKEND = 'fuse-native';
  const s = await setupStore(fillBasic, 'layerfs-backend-env-');
  try {
    await assert.rejects(mountBranch(s, { name: 'old' }), (e) => refused('LAYERFS_FUSE_BACKEND')(e) && /unset LAYERFS_FUSE_BACKEND/.test(String((e as { details: { hint?: string } }).details.hint)));
  } finally {
    if (before === undefined) delete process.env.LAYERFS_FUSE_BACKEND;
    else process.env.LAYERFS_FUSE_BACKEND = before;
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
  }
});
