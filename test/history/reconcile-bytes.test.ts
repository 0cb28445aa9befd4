/**
 * The byte-level three-way merge (lib/history/reconcile-bytes.ts) against its rule, stated from
 * the edits rather than the bytes: random range edits by up to four sides, merged one after the
 * other into a head, as reconciling commits do. Same-length edits merge unless two cover one
 * byte; once a side changed the length, its edits count as one region from the first to the
 * last, which must be apart from the other side's edits by at least one unchanged byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerFormat, mergeBytes } from '../../lib/history/reconcile-bytes.js';
import { rng } from '../helpers/random.js';

const SEED = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 1e9));
console.log(`reconcile-bytes seed ${SEED} (rerun with LAYERFS_SEED=${SEED})`);


interface Edit {
  start: number;
  deleteLength: number;
  bytes: Buffer;
}

function applyEdits(base: Buffer, edits: Edit[]): Buffer {
  let out = base;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = Buffer.concat([out.subarray(0, e.start), e.bytes, out.subarray(e.start + e.deleteLength)]);
  return out;
}

/** The rule, from the edits: the union, or null for a conflict. */
function expected(head: Edit[], ws: Edit[]): Edit[] | null {
  if (head.length === 0 || ws.length === 0) return [...head, ...ws];
  const grows = (es: Edit[]) => es.reduce((n, e) => n + e.bytes.length - e.deleteLength, 0) !== 0;
  const regions = (es: Edit[]) => (grows(es) ? [[Math.min(...es.map((e) => e.start)), Math.max(...es.map((e) => e.start + e.deleteLength))]] : es.map((e) => [e.start, e.start + e.deleteLength]));
  const kept = !grows(head) && !grows(ws);
  for (const [hs, he] of regions(head)) for (const [s, e] of regions(ws)) if (kept ? hs! < e! && s! < he! : hs! <= e! && s! <= he!) return null;
  return [...head, ...ws];
}

/** One side's edits: same-length ones apart from each other, or one that makes the file longer. Bytes >= 0x80, the base's < 0x80. */
function sideEdits(r: () => number, side: number, size: number): Edit[] {
  const fill = (n: number) => Buffer.from(Array.from({ length: n }, (_, k) => 0x80 | ((side * 29 + k) & 0x7f)));
  if (r() < 0.5) {
    const edits: Edit[] = [];
    let at = Math.floor(r() * 20);
    while (at < size && edits.length < 3) {
      const len = Math.min(1 + Math.floor(r() * 12), size - at);
      edits.push({ start: at, deleteLength: len, bytes: fill(len) });
      at += len + 1 + Math.floor(r() * 60);
    }
    return edits;
  }
  const start = Math.floor(r() * (size + 1));
  const deleteLength = Math.min(Math.floor(r() * 6), size - start);
  return [{ start, deleteLength, bytes: fill(deleteLength + 1 + Math.floor(r() * 5)) }];
}

test('byte merge follows its rule for random range edits of up to four sides', () => {
  const r = rng(SEED);
  const tally = { merged: 0, conflicted: 0 };
  for (let round = 0; round < 3000; round++) {
    const size = 1 + Math.floor(r() * 127);
    const base = Buffer.from(Array.from({ length: size }, (_, i) => i));
    let headEdits: Edit[] = [];
    const sides = 2 + Math.floor(r() * 3);
    for (let s = 0; s < sides; s++) {
      const ws = sideEdits(r, s, size);
      const want = expected(headEdits, ws);
      const got = mergeBytes(base, applyEdits(base, headEdits), applyEdits(base, ws));
      const what = `seed ${SEED} round ${round} side ${s}: head ${JSON.stringify(headEdits.map((e) => [e.start, e.deleteLength, e.bytes.length]))} ws ${JSON.stringify(ws.map((e) => [e.start, e.deleteLength, e.bytes.length]))}`;
      if (want === null) {
        assert.equal(got.ok, false, what);
        tally.conflicted++;
        continue;
      }
      assert.ok(got.ok, `${what}: ${got.ok ? '' : got.message}`);
      assert.deepEqual(got.bytes, applyEdits(base, want), what);
      headEdits = want;
      tally.merged++;
    }
  }
  console.log(`reconcile-bytes outcomes ${JSON.stringify(tally)}`);
  assert.ok(tally.merged > 100 && tally.conflicted > 100, JSON.stringify(tally));
});

test('a byte both sides changed to the same value is no conflict; to different values is one', () => {
  const base = Buffer.from('0123456789');
  assert.deepEqual(mergeBytes(base, Buffer.from('0X23456789'), Buffer.from('0X234567Y9')), { ok: true, bytes: Buffer.from('0X234567Y9') });
  const c = mergeBytes(base, Buffer.from('0X23456789'), Buffer.from('0Z23456789'));
  assert.equal(c.ok, false);
  assert.deepEqual(!c.ok && c.ranges, { head: [1, 2], workspace: [1, 2] });
});

test('formats whose bytes refer to each other are never merged byte by byte', () => {
  for (const [name, magic] of [['SQLite', 'SQLite format 3\0'], ['zip', 'PK\x03\x04'], ['PDF', '%PDF-1.7']] as const) {
    const base = Buffer.concat([Buffer.from(magic, 'latin1'), Buffer.alloc(4096)]);
    const head = Buffer.from(base);
    head[100] = 1;
    const ws = Buffer.from(base);
    ws[3000] = 2;
    assert.equal(containerFormat(base), name);
    const m = mergeBytes(base, head, ws);
    assert.equal(m.ok, false, name);
    assert.match(!m.ok ? m.message : '', new RegExp(`a ${name} file`));
  }
});
