// Unix sockets in a FUSE Workspace are live inodes: a server binds one in the mount and a
// client connects through that path; commits leave them out (as import does), over a stored
// name too, and the socket stays usable after the commit. Directory link counts follow
// subdirectories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConnection, createServer, type Server } from 'node:net';
import { lstat, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, fuseChanges, type Backend } from '../../lib/fuse/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { setupStore, withMount } from './helpers.js';
import { fillBasic } from './scenarios.js';

function listen(path: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((c) => c.end('hello from the server'));
    server.once('error', reject);
    server.listen(path, () => resolve(server));
  });
}

function ask(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const c = createConnection(path);
    c.setEncoding('utf8').on('data', (d: string) => (got += d));
    c.on('end', () => resolve(got));
    c.on('error', reject);
  });
}

for (const backend of ['kernel'] as Backend[]) {
  test(`${backend}: a socket bound in the mount serves connections; commits leave it out`, async () => {
    const s = await setupStore(fillBasic, 'layerfs-sock-');
    await withMount(
      s,
      async (m) => {
        // Over a stored name: the commit drops the stored file, keeps the socket live.
        await rm(join(m.path, 'README'));
        const server = await listen(join(m.path, 'README'));
        const alsoNew = await listen(join(m.path, 'lib/agent.sock'));
        try {
          assert.ok((await lstat(join(m.path, 'README'))).isSocket());
          assert.equal(await ask(join(m.path, 'README')), 'hello from the server');
          const changes = (await fuseChanges(s.storePath, m.workspaceId)).changes;
          assert.ok(!changes.some((c) => c.path === 'lib/agent.sock'), 'status leaves sockets out');
          const c = await commitFuse(s.storePath, m.workspaceId);
          assert.equal(c.outcome, 'Created');
          const stored = s.client.ls('main').map((e) => e.name);
          assert.ok(!stored.includes('README'), 'the stored file went, the socket was not stored');
          assert.ok(!s.client.ls('main', 'lib').some((e) => e.name === 'agent.sock'));
          // Still live after the commit (the overlay rebased onto the Commit).
          assert.equal(await ask(join(m.path, 'lib/agent.sock')), 'hello from the server');
          assert.ok((await readdir(join(m.path, 'lib'))).includes('agent.sock'));
          // Nothing left to commit but the sockets.
          const again = await commitFuse(s.storePath, m.workspaceId);
          assert.ok(again.outcome === 'UpToDate' || again.outcome === 'Created', again.outcome);
        } finally {
          server.close();
          alsoNew.close();
        }
      },
      { backend },
    );
    assertStoreIntact(s.storePath);
  });

  test(`${backend}: a directory's link count is 2 + its subdirectories`, async () => {
    const s = await setupStore(fillBasic, 'layerfs-nlink-');
    await withMount(
      s,
      async (m) => {
        const base = (await stat(join(m.path, 'lib'))).nlink; // stored: lib/deep
        assert.equal(base, 3);
        await mkdir(join(m.path, 'lib/x'));
        await mkdir(join(m.path, 'lib/y'));
        assert.equal((await stat(join(m.path, 'lib'))).nlink, 5);
        await rm(join(m.path, 'lib/x'), { recursive: true });
        assert.equal((await stat(join(m.path, 'lib'))).nlink, 4);
        assert.equal((await stat(join(m.path, 'lib/y'))).nlink, 2);
        const c = await commitFuse(s.storePath, m.workspaceId);
        assert.equal(c.outcome, 'Created');
        assert.equal((await stat(join(m.path, 'lib'))).nlink, 4, 'after the commit too');
      },
      { backend },
    );
    assertStoreIntact(s.storePath);
  });
}
