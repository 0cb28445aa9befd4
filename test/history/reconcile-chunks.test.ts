/**
 * The chunk-level merge of large files (lib/history/reconcile-chunks.ts) against a byte-level
 * model: random edits by two sides of one file. Edits far apart (more than a few chunks) must
 * merge, and the result must be the base with both sides' edits and be stored exactly as an
 * import of those bytes would be (same extent tree root); edits that share a byte must be
 * Conflicted with ranges covering them; edits near each other may merge (then into the same
 * bytes) or conflict. Wherever the whole-file byte merge (mergeBytes) succeeds and the chunk
 * merge does too, they agree.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mergeBytes } from '../../lib/history/reconcile-bytes.js';
import { mergeChunked } from '../../lib/history/reconcile-chunks.js';
import { ContentForm, InodeKind, readRange, storeBytes, Store, type Inode } from '../../lib/store/index.js';
import { Rng, seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const SEED = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 1e9));
console.log(`reconcile-chunks seed ${SEED} (rerun with LAYERFS_SEED=${SEED})`);

/** Edits this far apart are in chunks neither side touched: they must merge. */
const FAR = 5 * 32 * 1024;

interface Edit {
  start: number;
  deleteLength: number;
  bytes: Buffer;
}

function applyEdits(base: Buffer, edits: Edit[]): Buffer {
  const pieces: Buffer[] = [];
  let at = 0;
  for (const e of [...edits].sort((a, b) => a.start - b.start)) {
    pieces.push(base.subarray(at, e.start), e.bytes);
    at = e.start + e.deleteLength;
  }
  pieces.push(base.subarray(at));
  return Buffer.concat(pieces);
}

/** Up to three non-overlapping edits of one side; its bytes have the top bit set differently per side. */
function sideEdits(r: Rng, side: number, size: number, near?: Edit[]): Edit[] {
  const edits: Edit[] = [];
  const n = 1 + r.below(3);
  for (let k = 0; k < 50 && edits.length < n; k++) {
    const anchor = near && near.length > 0 && r.float() < 0.6 ? near[r.below(near.length)]! : undefined;
    const spread = r.float() < 0.5 ? 2048 : FAR;
    const start = anchor ? Math.max(0, Math.min(size, anchor.start + r.below(2 * spread) - spread)) : r.below(size + 1);
    const deleteLength = Math.min(size - start, r.float() < 0.3 ? 0 : 1 + r.below(r.float() < 0.5 ? 64 : 40_000));
    const kind = r.below(3); // same length, shorter, longer
    const len = kind === 0 ? deleteLength : kind === 1 ? r.below(deleteLength + 1) : deleteLength + 1 + r.below(30_000);
    if (len === 0 && deleteLength === 0) continue;
    const e = { start, deleteLength, bytes: seededBytes(SEED + k * 7 + side, len, side + 1) };
    for (let i = 0; i < len; i++) e.bytes[i] = (e.bytes[i]! & 0x7f) | (side === 0 ? 0x80 : 0);
    if (edits.some((x) => x.start <= e.start + e.deleteLength && e.start <= x.start + x.deleteLength)) continue;
    edits.push(e);
  }
  return edits;
}

const gap = (a: Edit, b: Edit) => Math.max(a.start, b.start) - Math.min(a.start + a.deleteLength, b.start + b.deleteLength);
const sharesByte = (a: Edit, b: Edit) => Math.max(a.start, b.start) < Math.min(a.start + a.deleteLength, b.start + b.deleteLength);

function file(size: number, stored: { form: ContentForm; content: Buffer | null }): Inode {
  return { kind: InodeKind.File, mode: 0o644, uid: 0, gid: 0, size, mtimeNs: 0n, form: stored.form, content: stored.content, xattrs: [], parents: [1] } as unknown as Inode;
}

test('chunk-level merge of random edits follows the byte-level model', { timeout: 600_000 }, () => {
  const dir = tempDir('layerfs-chunks-');
  const store = Store.create(join(dir, 's.sqlite'));
  const r = new Rng(SEED);
  const tally = { merged: 0, conflicted: 0, nearMerged: 0 };
  try {
    for (let round = 0; round < 40; round++) {
      const size = 1024 * 1024 + r.below(3 * 1024 * 1024);
      const base = seededBytes(SEED + round, size, 9);
      for (let i = 0; i < size; i++) base[i] = base[i]! & 0x7f; // edits' bytes differ from every base byte
      const head = sideEdits(r, 0, size);
      const ws = sideEdits(r, 1, size, r.float() < 0.7 ? head : undefined);
      const [hb, wb] = [applyEdits(base, head), applyEdits(base, ws)];
      const what = `seed ${SEED} round ${round}: head ${JSON.stringify(head.map((e) => [e.start, e.deleteLength, e.bytes.length]))} ws ${JSON.stringify(ws.map((e) => [e.start, e.deleteLength, e.bytes.length]))}`;
      const files = store.writeSync((w) => [base, hb, wb].map((b) => file(b.length, storeBytes(b, w))));
      const m = store.writeSync((w) => mergeChunked(store.objects, w, files[0]!, files[1]!, files[2]!));
      const overlap = head.some((a) => ws.some((b) => sharesByte(a, b)));
      const far = head.every((a) => ws.every((b) => gap(a, b) > FAR));
      if (!m.ok) {
        tally.conflicted++;
        assert.ok(!far, `${what}: edits far apart must merge, got ${m.message}`);
        assert.ok(m.ranges.length > 0, `${what}: a conflict has ranges`);
        for (const [a, b] of head.flatMap((a) => ws.map((b) => [a, b] as const)).filter(([a, b]) => sharesByte(a, b))) {
          const lo = Math.max(a.start, b.start);
          assert.ok(m.ranges.some((x) => x.base[0] <= lo && lo < x.base[1]), `${what}: the shared byte ${lo} is in a reported range`);
        }
        continue;
      }
      assert.ok(!overlap, `${what}: edits sharing a byte must conflict`);
      tally.merged++;
      if (!far) tally.nearMerged++;
      const want = applyEdits(base, [...head, ...ws]);
      const got = Buffer.concat([...readRange(store.objects, file(m.size, m.stored), {})]);
      assert.equal(m.size, want.length, `${what}: size`);
      assert.ok(got.equals(want), `${what}: the merged bytes are the base with both sides' edits`);
      const canonical = store.writeSync((w) => storeBytes(want, w));
      assert.ok(canonical.content!.equals(m.stored.content!), `${what}: stored as an import of the same bytes would be`);
      const whole = mergeBytes(base, hb, wb);
      if (whole.ok) assert.ok(whole.bytes.equals(got), `${what}: agrees with the whole-file byte merge`);
    }
  } finally {
    store.close();
  }
  console.log(`reconcile-chunks: ${JSON.stringify(tally)}`);
  assert.ok(tally.merged > 5 && tally.conflicted > 2, `both outcomes are exercised: ${JSON.stringify(tally)}`);
});

test('a SQLite file is never merged chunk by chunk; identical edits on both sides merge', () => {
  const dir = tempDir('layerfs-chunks-');
  const store = Store.create(join(dir, 's.sqlite'));
  try {
    const base = seededBytes(5, 2 * 1024 * 1024, 3);
    Buffer.from('SQLite format 3\0', 'latin1').copy(base, 0);
    const h = Buffer.from(base);
    h.fill(1, 100_000, 100_010);
    const w = Buffer.from(base);
    w.fill(2, 1_500_000, 1_500_010);
    const files = store.writeSync((wr) => [base, h, w].map((b) => file(b.length, storeBytes(b, wr))));
    const m = store.writeSync((wr) => mergeChunked(store.objects, wr, files[0]!, files[1]!, files[2]!));
    assert.ok(!m.ok && /SQLite/.test(m.message), 'SQLite is refused');
    base.fill(0, 0, 16);
    h.fill(0, 0, 16);
    const same = store.writeSync((wr) => [base, h, h].map((b) => file(b.length, storeBytes(b, wr))));
    const s = store.writeSync((wr) => mergeChunked(store.objects, wr, same[0]!, same[1]!, same[2]!));
    assert.ok(s.ok && s.stored.content!.equals(same[1]!.content!), 'the same edit on both sides is taken once');
  } finally {
    store.close();
  }
});
