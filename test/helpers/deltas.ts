import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { LayerFsError } from '../../lib/errors.js';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';

/**
 * Versions of one blob: `first`, then `count - 1` edits (`edit(previous, v)`), each written in
 * its own transaction and hinted with its predecessor as delta base. Returns [id, bytes] each.
 */
export function hintedChain(store: Store, first: Buffer, count: number, edit: (prev: Buffer, v: number) => Buffer): [Buffer, Buffer][] {
  let prev = first;
  let prevId = store.writeSync((w) => w.add(ObjectKind.Blob, prev));
  const out: [Buffer, Buffer][] = [[prevId, prev]];
  for (let v = 1; v < count; v++) {
    const next = edit(prev, v);
    const id = store.writeSync((w) => {
      const id = w.add(ObjectKind.Blob, next);
      w.suggestBase(id, prevId);
      return id;
    });
    out.push([id, next]);
    prev = next;
    prevId = id;
  }
  return out;
}

/** Delta links from `id` to a whole object, following the first base of each. */
export function depthOf(store: Store, id: Buffer): number {
  const loc = store.objects.locator(id)!;
  return loc.codec === Codec.Delta ? 1 + depthOf(store, loc.base!.subarray(0, 32)) : 0;
}

/** A read of `id` from the Store at `path` (opened read-only) fails with ERR_CORRUPT. */
export function assertCorruptRead(path: string, id: Buffer): void {
  const s = Store.open(path, { readonly: true });
  try {
    assert.throws(() => s.objects.get(id), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
  } finally {
    s.close();
  }
}

/** Flips bits (`mask`) in the middle of `id`'s stored bytes, in place in its pack row; its codec must be `codec`. */
export function damageStored(path: string, id: Buffer, codec: Codec, mask: number): void {
  const db = new Database(path);
  try {
    const loc = db.prepare('SELECT codec, pack, offset, length FROM objects WHERE id = ?').get(id) as { codec: number; pack: number; offset: number; length: number };
    assert.equal(loc.codec, codec);
    const data = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer);
    data[loc.offset + (loc.length >> 1)]! ^= mask;
    db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, loc.pack);
  } finally {
    db.close();
  }
}
