// format-patch: the mbox series of a Branch applied by `git am` to a git repository of the
// base reproduces every Commit's tree, message, author and time (random edit scripts, seed printed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { gitView } from '../helpers/edits.js';
import { git, randomHistory } from '../helpers/history.js';
import { authorParts, splitMessage } from '../../lib/sdk/format-patch.js';

test('format-patch + git am reproduces every Commit', async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 100000);
  console.log(`seed ${seed}`);
  const h = await randomHistory(seed, 5);
  writeFileSync(join(h.ws.path, 'ünï.txt'), 'grüße\n');
  await h.client.commitWorkspace(h.ws.id, { message: 'Ünïcode subject\n\nbödy line\nsecond line\n', author: 'Zoë Ärger <zoe@example.com>' });
  const repo = join(h.dir, 'repo');
  h.client.export('proj', repo);
  git(repo, ['init', '-q']);
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '--allow-empty', '-m', 'base']); // a random base may hold nothing git tracks (seed 72062)
  const out = join(h.dir, 'patches');
  const r = h.client.formatPatch('main', out);
  assert.deepEqual(readdirSync(out).map((f) => join(out, f)).sort(), r.files);
  const commits = h.client.log('main').reverse().filter((c) => !r.empty.includes(c.id));
  assert.deepEqual(r.commits, commits.map((c) => c.id));
  git(repo, ['am', '-q', '--whitespace=nowarn', ...r.files]);
  const shas = git(repo, ['rev-list', '--reverse', 'HEAD']).trim().split('\n').slice(1);
  assert.equal(shas.length, commits.length);
  for (let i = 0; i < commits.length; i++) {
    const c = commits[i]!;
    git(repo, ['checkout', '-q', shas[i]!]);
    const want = join(h.dir, `want-${i}`);
    h.client.export(c.id, want);
    assert.deepEqual(gitView(repo), gitView(want), `seed ${seed} Commit ${i}`);
    assert.equal(git(repo, ['log', '-1', '--format=%B', shas[i]!]).trimEnd(), c.message.trimEnd());
    const a = authorParts(c.author);
    assert.equal(git(repo, ['log', '-1', '--format=%an <%ae>', shas[i]!]).trim(), `${a.name} <${a.email}>`);
    assert.equal(Number(git(repo, ['log', '-1', '--format=%at', shas[i]!]).trim()), Math.floor(Date.parse(c.createdAt) / 1000));
    rmSync(want, { recursive: true });
  }
  // --since: only the Commits after it.
  const cl = cli(['--store', h.store, 'format-patch', 'main', '--since', commits[1]!.id.slice(0, 16), '--out', join(h.dir, 'later'), '--json']);
  assert.equal(cl.code, 0, cl.stderr);
  assert.deepEqual(cl.json.commits, commits.slice(2).map((c) => c.id));
  const bad = cli(['--store', h.store, 'format-patch', 'main', '--since', 'ffffffffffff', '--out', join(h.dir, 'x')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /ERR_NOT_FOUND/);
  h.client.close();
});

test('messages and authors are split as git does', () => {
  assert.deepEqual(splitMessage('fix it\n\nbecause\n', 'ab'), { subject: 'fix it', body: 'because\n' });
  assert.deepEqual(splitMessage('two\nlines\n\nbody', 'ab'), { subject: 'two lines', body: 'body\n' });
  assert.deepEqual(splitMessage('', 'abcdef0123456789'), { subject: 'layerfs Commit abcdef012345', body: '' });
  assert.deepEqual(authorParts('Ann <a@b.c>'), { name: 'Ann', email: 'a@b.c' });
  assert.deepEqual(authorParts('root@host'), { name: 'root', email: 'root@host' });
  assert.deepEqual(authorParts('ci bot'), { name: 'ci bot', email: 'ci.bot@localhost' });
});
