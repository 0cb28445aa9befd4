// fuseAvailable (what `auto` and the FUSE tests go by): root mounts through the kernel backend
// without fusermount; an ordinary user needs fusermount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/tmp.js';

const probe = new URL('../../lib/fuse/probe.ts', import.meta.url).href;
const tsx = import.meta.resolve('tsx');

function probeWith(path: string, uid?: number): { ok: boolean; reason?: string } {
  const code = `const m = await import(${JSON.stringify(probe)}); console.log(JSON.stringify(m.fuseAvailable()));`;
  const r = spawnSync(process.execPath, ['--import', tsx, '--input-type=module', '-e', code], { env: { ...process.env, PATH: path }, encoding: 'utf8', cwd: '/', ...(uid === undefined ? {} : { uid, gid: uid }) });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('as root, FUSE is available with no fusermount on PATH', { skip: process.getuid?.() !== 0 ? 'this machine runs the tests as root; this case needs it' : false }, () => {
  assert.deepEqual(probeWith('/nonexistent'), { ok: true });
});

test('an ordinary user needs fusermount, and is told how to get it', { skip: process.getuid?.() !== 0 ? 'switching to another user needs root' : false }, () => {
  const bin = tempDir();
  const without = probeWith(bin, 65534);
  assert.equal(without.ok, false);
  assert.match(without.reason!, /fusermount|\/dev\/fuse/);
  mkdirSync(join(bin, 'with'));
  symlinkSync('/bin/true', join(bin, 'with/fusermount'));
  const r = probeWith(join(bin, 'with'), 65534);
  // /dev/fuse may refuse a user the machine does not trust; fusermount is then not the reason.
  if (!r.ok) assert.doesNotMatch(r.reason!, /fusermount/);
});

test('an ordinary user may let others in only where fuse.conf has user_allow_other', async () => {
  const { userAllowOther } = await import('../../lib/fuse/probe.js');
  const dir = tempDir('layerfs-fuseconf-');
  const conf = join(dir, 'fuse.conf');
  writeFileSync(conf, '# mount_max = 1000\n#user_allow_other\n');
  assert.equal(userAllowOther(conf), false, 'a commented line does not count');
  writeFileSync(conf, '# mount_max = 1000\n  user_allow_other  \n');
  assert.equal(userAllowOther(conf), true);
  assert.equal(userAllowOther(join(dir, 'missing.conf')), false);
});
