/**
 * The bridge between page trees and object storage: authenticated loads through a bounded cache
 * of decoded pages (ids are immutable, so a cached page is never stale), and saves into the
 * caller's transaction when a writer is attached.
 */
import { LRUCache } from 'lru-cache';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { idOf, ObjectKind } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import type { ObjectWriter } from './object-writer.js';
import { decodeNode, type PageIO, type TreeKind, type TreeNode } from './tree/pages.js';

/** Heap a decoded page's entry costs beside its bytes: two Buffer views and their array slots. */
const PAGE_ENTRY_HEAP = 200;
/** Heap the cache of decoded pages may take, unless the Store was opened with another bound (OpenOptions.pageCacheBytes). */
const PAGE_CACHE_HEAP = 12 * 1024 * 1024;

function pageHeap(n: TreeNode): number {
  let bytes = 64;
  for (let i = 0; i < n.keys.length; i++) bytes += PAGE_ENTRY_HEAP + n.keys[i]!.length + n.vals[i]!.length;
  return bytes;
}

export class PageStore implements PageIO {
  private readonly cache: LRUCache<string, TreeNode>;
  /**
   * The page last loaded per tree kind and level while writing: a tree update loads a page and
   * then writes its new version, so that page is offered as the delta base of the next save.
   */
  private readonly lastLoaded = new Map<number, Buffer>();
  /** While set, pages are saved through it; pages it has not flushed yet are read from it. */
  writer: ObjectWriter | null = null;

  constructor(
    private readonly reader: ObjectReader,
    heap = PAGE_CACHE_HEAP,
    limit = 8192,
  ) {
    // Bounded by heap: a decoded page costs its bytes plus about PAGE_ENTRY_HEAP per entry (a key
    // and a value Buffer), so a commit that reads every page of a large inode table keeps at most
    // `heap` of them. Each page counts at least 1/limit of that, which bounds the count too
    // without `max`: with `max`, lru-cache allocates its index for all `limit` entries at every
    // Store open, which a short-lived process (one import) never fills.
    // As cacheKiB is: at least 64 KiB, whatever was asked.
    const bound = Number.isFinite(heap) ? Math.max(64 * 1024, Math.floor(heap)) : PAGE_CACHE_HEAP;
    const least = Math.ceil(bound / limit);
    this.cache = new LRUCache({ maxSize: bound, sizeCalculation: (n) => Math.max(least, pageHeap(n)) });
  }

  load(kind: TreeKind, id: Buffer): TreeNode {
    const node = this.loadNode(kind, id);
    if (this.writer) this.lastLoaded.set(kind * 256 + node.level, id);
    return node;
  }

  private loadNode(kind: TreeKind, id: Buffer): TreeNode {
    const key = id.toString('latin1');
    const hit = this.cache.get(key);
    if (hit) return hit;
    // Flushed pages are in the index already (uncommitted rows are visible to this connection).
    const data = this.writer?.unflushed(id) ?? this.reader.get(id, ObjectKind.Page);
    const node = decodeNode(kind, data, `page ${toHex(id)}`);
    this.cache.set(key, node);
    return node;
  }

  save(kind: TreeKind, data: Buffer): Buffer {
    if (!this.writer) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'page save outside a write transaction');
    const id = idOf(ObjectKind.Page, data);
    // The next commit on this tree loads this page first (its base is this commit's root).
    this.reader.remember(id, ObjectKind.Page, data);
    if (this.writer.put(ObjectKind.Page, id, data)) {
      // Page byte 1 is its level (docs/FORMAT.md).
      const base = this.lastLoaded.get(kind * 256 + data[1]!);
      if (base) this.writer.suggestBase(id, base);
    }
    return id;
  }

  /** Ends a write phase; pages it wrote are now read from the Store (or gone after a rollback). */
  endWrite(): void {
    this.writer = null;
    this.lastLoaded.clear();
  }
}
