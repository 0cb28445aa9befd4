// Forged Stores: a real Store whose state is replaced by objects written here, through the
// project's own encoders (idOf, encodeInode, encodeNode, encodeRoot, encodeExtentNode) or as raw
// bytes the encoders would refuse to write. The forged state becomes the root of the Store's
// first Layer (so `main`, forked from it, shows it too), as a Store handed to a victim would.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { ContentForm, InodeKind, ObjectKind, Store, TreeKind, encodeInode, idOf, type Inode } from '../../lib/store/index.js';
import { encodeExtentNode } from '../../lib/store/tree/extents.js';
import { encodeSerial, serialKey } from '../../lib/store/tree/inode.js';
import { encodeNode } from '../../lib/store/tree/pages.js';
import { encodeRoot } from '../../lib/store/tree/root.js';
import { tempDir } from './tmp.js';

export { ContentForm, InodeKind, ObjectKind, TreeKind };

/** A Store with one LayerStack `proj` (from a one-file tree) and a Branch `main`; returns its path. */
export async function plainStore(prefix = 'layerfs-forge-'): Promise<{ dir: string; storePath: string }> {
  const dir = tempDir(prefix);
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'a\n');
  const storePath = join(dir, 'store.sqlite');
  const c = Client.create(storePath);
  try {
    const init = await c.initLayerStack({ name: 'proj', source: src });
    c.forkBranch({ name: 'main', layer: init.layer.id });
  } finally {
    c.close();
  }
  return { dir, storePath };
}

export type Entry = [name: string | Buffer, serial: number];

/** Writes objects into an open Store and points its first Layer at a forged state. */
export class Forge {
  readonly store: Store;

  constructor(storePath: string) {
    this.store = Store.open(storePath);
  }

  close(): void {
    this.store.close();
  }

  /** Stores raw bytes as an object of `kind` (any bytes: the id is their hash). */
  put(kind: ObjectKind, data: Buffer): Buffer {
    const id = idOf(kind, data);
    this.store.writeSync((w) => void w.put(kind, id, data));
    return id;
  }

  /** One namespace page from already sorted entries (values raw at level 0, child ids above). */
  page(kind: TreeKind, level: number, keys: Buffer[], vals: Buffer[]): Buffer {
    return this.put(ObjectKind.Page, encodeNode(kind, { level, keys, vals }));
  }

  /** A one-page directory tree (null when empty); entries are sorted here. */
  dir(entries: Entry[]): Buffer | null {
    if (entries.length === 0) return null;
    const sorted = entries.map(([n, s]) => [Buffer.isBuffer(n) ? n : Buffer.from(n), s] as const).sort((a, b) => Buffer.compare(a[0], b[0]));
    return this.page(TreeKind.Directory, 0, sorted.map((e) => e[0]), sorted.map((e) => encodeSerial(e[1])));
  }

  /** An inode with defaults: a 0644 root-owned file, or a 0755 directory. */
  inode(p: Partial<Inode> & { kind: InodeKind }): Inode {
    return { mode: p.kind === InodeKind.Dir ? 0o755 : 0o644, uid: 0, gid: 0, mtimeNs: 0n, size: 0, nlink: 1, parents: [], form: ContentForm.None, content: null, xattrs: [], ...p };
  }

  directory(entries: Entry[], parents: number[] = []): Inode {
    const content = this.dir(entries);
    return this.inode({ kind: InodeKind.Dir, parents, form: content ? ContentForm.Whole : ContentForm.None, content });
  }

  file(data: Buffer, parents: number[] = [1], size = data.length): Inode {
    return this.inode({ kind: InodeKind.File, parents, size, form: ContentForm.Whole, content: this.put(ObjectKind.Blob, data) });
  }

  extentNode(level: number, ids: Buffer[], lengths: number[]): Buffer {
    return this.put(ObjectKind.Extents, encodeExtentNode({ level, ids, lengths }));
  }

  /** A state from an inode table (serial → inode record, encoded here or given raw); returns its root id. */
  state(inodes: Map<number, Inode | Buffer>): Buffer {
    const serials = [...inodes.keys()].sort((a, b) => a - b);
    const table = this.page(
      TreeKind.Inodes,
      0,
      serials.map((s) => serialKey(s)),
      serials.map((s) => {
        const v = inodes.get(s)!;
        return Buffer.isBuffer(v) ? v : encodeInode(v);
      }),
    );
    return this.put(ObjectKind.Root, encodeRoot({ inodes: table }));
  }

  /** Makes `rootId` the state of the Store's first Layer (and so of `main`). */
  publish(rootId: Buffer): void {
    this.store.db.prepare('UPDATE layers SET root_id = ? WHERE seq = (SELECT MIN(seq) FROM layers)').run(rootId);
  }
}

/** Forges a Store whose `main` shows the given inode table; returns the Store path. */
export async function forgedStore(build: (f: Forge) => Map<number, Inode | Buffer>): Promise<{ dir: string; storePath: string }> {
  const s = await plainStore();
  const f = new Forge(s.storePath);
  try {
    f.publish(f.state(build(f)));
  } finally {
    f.close();
  }
  return s;
}
