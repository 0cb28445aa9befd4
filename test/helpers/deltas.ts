import assert from 'node:assert/strict';
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
