// Helpers for tests of spool files (lib/fuse/spool.ts, native/napi_write_behind.cc).
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { Overlay } from '../../lib/fuse/overlay.js';
import { setupStore } from './helpers.js';

export const O_DIRECT = 0o40000;
const fromHex = (h: string) => Buffer.from(h, 'hex');

/** An in-process overlay of branch main whose every written byte goes to a spool file under `spoolDir` (no memory budget). */
export function fileSpooledOverlay(store: Store, client: Client, spoolDir: string): Overlay {
  const info = client.branch('main');
  const head = info.headCommitId;
  return new Overlay(store, fromHex(info.rootId), { branchId: fromHex(info.id), expectedHead: head ? fromHex(head) : null, expectedBase: fromHex(info.baseLayerId) }, { spoolDir, memoryBudget: 0 });
}

/** Descriptors of this process open with O_DIRECT on a file under `dir` (from /proc/self/fdinfo). */
export function directDescriptors(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (target.startsWith(dir) && flags !== undefined && (parseInt(flags, 8) & O_DIRECT) !== 0) out.push(target);
    } catch {
      // The descriptor closed meanwhile.
    }
  }
  return out;
}

/**
 * Runs `fn` on a fresh Store (branch main, nothing imported) with an in-process overlay whose
 * spool files go under the returned `spoolDir`; the Store is verified after `fn` and closed.
 */
export async function withSpooledOverlay(prefix: string, fn: (ov: Overlay, spoolDir: string) => void | Promise<void>): Promise<void> {
  const { dir, storePath, client } = await setupStore(() => {}, prefix);
  const spoolDir = join(dir, 'spool');
  mkdirSync(spoolDir);
  const store = Store.open(storePath);
  try {
    await fn(fileSpooledOverlay(store, client, spoolDir), spoolDir);
    assert.equal(client.verify().ok, true, 'the Store verifies');
  } finally {
    store.close();
    client.close();
  }
}

/** `model` read back through `fh`, then committed, read again from the committed state (file `serial`) and compared; `fh` is released. */
export function assertWrittenAndCommitted(ov: Overlay, serial: number, fh: number, model: Buffer): void {
  const back = Buffer.alloc(model.length);
  assert.equal(ov.read(fh, back, model.length, 0), model.length);
  assert.ok(back.equals(model), 'read back as written');
  ov.release(fh);
  assert.equal(ov.commitSync().outcome, 'Created');
  assert.equal(ov.getattr(serial).size, model.length);
  const ro = ov.open(serial, 0);
  const stored = Buffer.alloc(model.length);
  assert.equal(ov.read(ro, stored, model.length, 0), model.length);
  ov.release(ro);
  assert.ok(stored.equals(model), 'committed as written');
}
