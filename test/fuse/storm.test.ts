// Rename/link/unlink storms: a long random sequence of namespace operations applied to a mount
// and to a plain directory must leave equal trees (and equal errors on the way); several
// processes hammering the mount at once must leave a tree that commits and remounts intact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';
import { mountBranch, ok, setupStore, walk, withMount } from './helpers.js';
import { fillStorm as fill, stormScenario } from './scenarios.js';

test('a random rename/link/unlink storm gives the same results and tree as a plain directory', () => stormScenario());

test('concurrent processes storming one mount leave a consistent tree that commits and remounts', async () => {
  const s = await setupStore(fill, 'layerfs-storm2-');
  const script = (id: number) => `
set +e
cd "$1"
mkdir -p w${id}
for i in $(seq 1 150); do
  echo "$i" > w${id}/t$i
  mv w${id}/t$i w${id}/u$((i % 10))
  ln w${id}/u$((i % 10)) w${id}/h$((i % 7)) 2>/dev/null || ln -f w${id}/u$((i % 10)) w${id}/h$((i % 7))
  [ $((i % 3)) -eq 0 ] && rm -f w${id}/h$((i % 7))
  mv -f d$((i % 4))/f$((i % 6)) d$(((i + 1) % 4))/f$((i % 6)) 2>/dev/null
  mkdir -p w${id}/dir$((i % 5)) && rmdir w${id}/dir$(((i + 2) % 5)) 2>/dev/null
done
exit 0
`;
  let tree;
  await withMount(s, async (m) => {
    await Promise.all([0, 1, 2, 3].map((id) => ok('sh', ['-c', script(id), 'storm', m.path])));
    tree = await walk(m.path);
    for (const id of [0, 1, 2, 3]) assert.ok((await readdir(join(m.path, `w${id}`))).length > 0);
    assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
    assert.deepEqual(await walk(m.path), tree);
  });
  const again = await mountBranch(s);
  try {
    assert.deepEqual(await walk(again.path), tree);
  } finally {
    await unmountWorkspace(s.storePath, again.workspaceId, { discard: true });
    await stopDaemon(s.storePath, { discard: true });
  }
  assert.equal(s.client.verify().ok, true);
});
