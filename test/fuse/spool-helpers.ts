// Helpers for tests of spool files (lib/fuse/spool.ts, native/napi_write_behind.cc).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { Client } from '../../lib/sdk/index.js';
import type { Store } from '../../lib/store/index.js';
import { Overlay } from '../../lib/fuse/overlay.js';

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
