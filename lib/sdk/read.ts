/**
 * Reading a state: its root, the entries of a directory, a file's content; and the listings of
 * LayerStacks and Layers. Over a Store alone
 * (no Monitor, no Workspaces), so that a command that only reads loads only this path: the Store,
 * its namespace trees and the history rows a reference names (reader.ts).
 */
import { LayerFsError } from '../errors.js';
import { FdOutput } from '../native/fd-output.js';
import type { ReadStore as Store } from '../store/store-read.js';
import { InodeKind } from '../store/tree/inode.js';
import { readRange, type ByteRange } from '../store/read-range.js';
import { toHex } from '../format/hex.js';
import { listLayers, listLayerStacks, resolveLayerStack } from '../history/layerstacks.js';
import { entryInfo, layerInfo, layerStackInfo } from './convert.js';
import { splitStatePath } from './paths.js';
import { resolveState } from './refs.js';
import type { EntryInfo, LayerInfo, LayerStackInfo } from './types.js';

/**
 * A state reference: a Layer or Commit id (or unambiguous prefix), a Branch name or id (its
 * current state), or a LayerStack name (its head Layer).
 */
export type StateRef = string;

/** The root of a state. */
export function stateRoot(store: Store, ref: StateRef): Buffer {
  return resolveState(store, ref).rootId;
}

export function ls(store: Store, ref: StateRef, path?: string | Buffer): EntryInfo[] {
  return store.read(() => {
    const view = store.view(stateRoot(store, ref));
    const parts = splitStatePath(path);
    const { serial, inode } = view.resolve(parts, String(path ?? ''));
    if (inode.kind !== InodeKind.Dir) return [entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode)];
    const out: EntryInfo[] = [];
    for (const e of view.readdir(inode)) out.push(entryInfo(e.name, e.serial, view.inode(e.serial)));
    return out;
  });
}

export function stat(store: Store, ref: StateRef, path?: string | Buffer): EntryInfo {
  return store.read(() => {
    const view = store.view(stateRoot(store, ref));
    const parts = splitStatePath(path);
    const { serial, inode } = view.resolve(parts, String(path ?? ''));
    return entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode);
  });
}

export function* readFile(store: Store, ref: StateRef, path: string | Buffer, range?: ByteRange, alloc?: (bytes: number) => Buffer): Generator<Buffer> {
  const view = store.view(stateRoot(store, ref));
  const display = String(path);
  const { inode } = view.resolve(splitStatePath(path), display);
  if (inode.kind !== InodeKind.File) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${display} is not a regular file`, { path: display });
  if (range === undefined) yield* view.content(inode, alloc);
  else yield* readRange(store.objects, inode, range);
}

/**
 * readFile's bytes written to descriptor `fd` by the addon's output thread (lib/native
 * fd-output.ts) while the next ones are decoded and verified: only verified bytes are handed
 * over, so a chunk that fails its check ends the output before its bytes (ERR_CORRUPT, after
 * the verified bytes before it are written). One read transaction: one snapshot throughout.
 * Returns the bytes written; a failed write throws ERR_NATIVE_IO with its errno (32: EPIPE).
 */
export function writeFileTo(store: Store, fd: number, ref: StateRef, path: string | Buffer, range?: ByteRange): number {
  const out = new FdOutput(fd);
  try {
    let bytes = 0;
    try {
      store.read(() => {
        for (const piece of readFile(store, ref, path, range, (n) => out.buffer(n))) {
          out.put(piece);
          bytes += piece.length;
        }
      });
    } finally {
      // What was handed over is verified: it goes out, also before a read error is thrown.
      out.finish();
    }
    return bytes;
  } finally {
    out.close();
  }
}


export function layerStacks(store: Store): LayerStackInfo[] {
  return listLayerStacks(store).map(layerStackInfo);
}

export function layers(store: Store, opts: { layerStack?: string }): LayerInfo[] {
  return store.read(() => {
    const names = new Map(listLayerStacks(store).map((s) => [toHex(s.id), s.name]));
    const stackId = opts.layerStack !== undefined ? resolveLayerStack(store, opts.layerStack).id : undefined;
    return listLayers(store, stackId).map((l) => layerInfo(l, names.get(toHex(l.layerStackId)) ?? ''));
  });
}
