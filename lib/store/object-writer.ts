/**
 * Writing objects: small objects are packed into zstd-compressed groups, a large file's chunks
 * into rows of separately compressed frames, and a changed file or page may be stored as a
 * delta against its previous version (docs/FORMAT.md "Physical forms"); the physical form never
 * changes an id.
 */
import { zstdCompressStart, zstdCompressWith } from '../native/zstd.js';
import { COMPRESSION_LEVEL, compressionEnabled, DICT_LEVEL, EDIT_CHUNKS, looksRandom } from './codec.js';
import { CHUNK_PACK_TARGET, GROUP_TARGET, PACK_TARGET, TREE_GROUP_TARGET } from './schema.js';
import type { ChunkDeltaSource } from './chunk-delta.js';
import type { Db } from './store-file.js';
import { mapSqliteError } from './sqlite-errors.js';
import { emptyWriteStats, idOf, ObjectKind, type WriteStats } from './object-id.js';
import { Staging } from './object-staging.js';
import { CHUNK_PROPOSALS_AHEAD, copyChunks, keptChunks, DETACHED, EDIT_GROUP_TARGET, EXPECTED_RATIO, Group, GroupBuffers, GroupClass, RowBuffer, RowQueue, TREE_EXPECTED_RATIO, type Pending, type RowPart } from './object-groups.js';
import { DeltaPlanner } from './object-deltas.js';
import { ObjectReader } from './object-reader.js';
import { BaseReader } from './base-reader.js';
import { currentDictionary, hasDictionary, setCurrentDictionary, type Dictionary } from './dictionary.js';
import { DictionaryTraining, type HeldGroup } from './dictionary-training.js';
import { INLINE_SEAL_BYTES, writeChunkRow, writeDictionaryRow, writeGroupRow, writerStatements, type WriterStatements } from './writer-statements.js';

/**
 * Writes objects inside the caller's transaction; `flush()` must run before it commits.
 * Duplicates (already stored, or already written by this writer) cost one index probe and no
 * payload bytes. Small objects go to groups of about GROUP_TARGET canonical bytes (a group is
 * sealed when the next object arrives, so the object written last is still open for
 * suggestBase); sealed frames and deltas are assembled into rows of about ROW_TARGET stored
 * bytes (few, large rows waste the least SQLite page space). The chunks of a large file go to
 * rows of their own of about CHUNK_PACK_TARGET bytes, cut into frames of about
 * CHUNK_FRAME_TARGET bytes (putChunks), so a random read decodes one frame.
 */
export class ObjectWriter {
  private readonly exists: WriterStatements['exists'];
  private readonly locate: WriterStatements['locate'];
  private readonly insertPack: WriterStatements['insertPack'];
  private readonly insertObject: WriterStatements['insertObject'];
  private readonly compress = compressionEnabled();
  private readonly groups: Group[];
  /** Per class, a sealed group whose delta proposals are judged at the class's next seal (seal). */
  private readonly judging: (Group | undefined)[] = [];
  /**
   * Objects of open groups, of the row being assembled and pending deltas by id (latin1): the
   * only ones a probe of the index cannot see yet.
   */
  private readonly open = new Map<string, Pending>();
  /** The rows being assembled from sealed groups and deltas, and complete ones not written yet. */
  private readonly rowQueue: RowQueue;
  private reader: ObjectReader | undefined;
  private bases: BaseReader | undefined;
  /** Canonical bytes of the groups sealed so far (the first INLINE_SEAL_BYTES are compressed inline). */
  private sealedBytes = 0;
  private readonly rows = new RowBuffer();
  private readonly plain = new RowBuffer();
  private readonly buffers = new GroupBuffers();
  private readonly planner: DeltaPlanner;
  /** The Store's dictionary for content groups: looked up at the first content group sealed (inside the transaction). */
  private dict: Dictionary | null | undefined;
  /** Samples of small content (and held groups), for a Store without a dictionary yet (dictionary-training.ts). */
  private training: DictionaryTraining | undefined;
  readonly stats: WriteStats = emptyWriteStats();
  /**
   * Set by a commit while it stores a changed large file: the previous version's chunks, offered
   * as delta bases to the new chunks (putChunks). Cleared by the caller when the file is stored.
   */
  deltaSource: ChunkDeltaSource | undefined;
  /**
   * Set while this writer stages (Store.writeStaged): no transaction is open yet, so the rows it
   * completes wait there as writes to run, and applyStaged() runs them under the write lock.
   */
  private staged: Staging | undefined;

  /**
   * `reader`: the Store handle's (a small commit's delta bases are the rows it just read to
   * re-cut them). `staged`: the writer stages (Store.writeStaged).
   */
  constructor(
    private readonly db: Db,
    private readonly path: string,
    reader?: ObjectReader,
    staged = false,
  ) {
    this.reader = reader;
    if (staged) this.staged = new Staging();
    ({ exists: this.exists, locate: this.locate, insertPack: this.insertPack, insertObject: this.insertObject } = writerStatements(db));
    // Uncompressed, a group is a row of its own (format 1's mixed rows).
    this.groups = this.compress
      ? [this.newGroup(GroupClass.Content), this.newGroup(GroupClass.Tree), this.newGroup(GroupClass.Random), this.newGroup(GroupClass.Edit)]
      : [new Group(false, PACK_TARGET)];
    this.rowQueue = new RowQueue(this.compress, (parts) => this.writeParts(parts));
    // A staged write is small: it could not train a dictionary, whose row it would write at once.
    this.training = this.compress && !staged && !hasDictionary(db) ? new DictionaryTraining() : undefined;
    this.planner = new DeltaPlanner({
      open: this.open,
      locate: (id) => this.locate.get(id) as { size: number; codec: number; base: Buffer | null } | undefined,
      borrow: (id) => (this.bases ??= new BaseReader(this.db, () => this.objectReader())).borrow(id),
      wholeCost: (data, dict = this.dictionary()) => zstdCompressWith(data, COMPRESSION_LEVEL, dict).length,
    });
  }

  private objectReader(): ObjectReader {
    return (this.reader ??= new ObjectReader(this.db, this.path));
  }

  /** The delta of `p` if it pays and its chain stays bounded (DeltaPlanner); never without compression. */
  private deltaOf(p: Pending, data: Uint8Array, bases: Buffer[]): Pending['delta'] {
    return this.compress ? this.planner.deltaOf(p, data, bases) : undefined;
  }

  private newGroup(c: GroupClass): Group {
    if (c === GroupClass.Tree) return new Group(true, TREE_GROUP_TARGET, this.buffers);
    if (c === GroupClass.Edit) return new Group(true, EDIT_GROUP_TARGET, this.buffers);
    return new Group(c !== GroupClass.Random, GROUP_TARGET, this.buffers);
  }

  private classOf(kind: ObjectKind, data: Uint8Array): number {
    if (!this.compress) return 0;
    if (kind === ObjectKind.Blob || kind === ObjectKind.Chunk) return looksRandom(data) ? GroupClass.Random : GroupClass.Content;
    return GroupClass.Tree;
  }

  /** Stores `data` under `id` unless present; returns whether it was new. */
  put(kind: ObjectKind, id: Buffer, data: Uint8Array): boolean {
    return this.putIn(kind, id, data, -1);
  }

  /** put() into the group of class `cls` (-1: the class of kind and data). */
  private putIn(kind: ObjectKind, id: Buffer, data: Uint8Array, cls: number): boolean {
    const key = id.toString('latin1');
    if (this.open.has(key) || this.stored(id)) {
      this.stats.objectsReused++;
      this.stats.bytesReused += data.length;
      return false;
    }
    const c = cls < 0 || !this.compress ? this.classOf(kind, data) : cls;
    let g = this.groups[c]!;
    if (g.bytes >= g.target) {
      this.seal(c);
      g = this.groups[c]!;
    }
    const p: Pending = { id, kind, group: g, offset: g.append(data), length: data.length };
    g.items.push(p);
    if (c === GroupClass.Content) this.training?.offer(data);
    this.open.set(key, p);
    this.stats.objectsInserted++;
    this.stats.bytesInserted += data.length;
    return true;
  }

  /** Hashes and stores; returns the id. */
  add(kind: ObjectKind, data: Uint8Array): Buffer {
    const id = idOf(kind, data);
    this.put(kind, id, data);
    return id;
  }

  /** A copy of an object written by this writer but not flushed yet, if it is one. */
  unflushed(id: Buffer): Buffer | undefined {
    const p = this.open.get(id.toString('latin1'));
    if (!p) return undefined;
    return p.delta ? this.planner.decoded(p) : Buffer.from(p.group.buf.subarray(p.offset, p.offset + p.length));
  }

  /**
   * Keeps a copy of `id`, written by this writer and not flushed yet, in the Store handle's
   * reader (ObjectReader.remember). A small commit's new blobs are the delta bases of the next
   * commit of the same Workspace wherever a file changes again, read then from memory instead
   * of their frames and delta chains. The reader drops them if the transaction rolls back.
   */
  keepWritten(id: Buffer): void {
    const p = this.open.get(id.toString('latin1'));
    if (!p || !this.reader?.keeps(p.length)) return;
    this.reader.remember(id, p.kind, this.unflushed(id)!);
  }

  /**
   * A hint that `id`, just written, is a new version of `bases` (a changed file or a rewritten
   * page; or the old chunks a re-chunked piece of a large file overlaps, in file order, at most
   * DELTA_MAX_BASES). If `id` is still in an open group and a zstd delta against the bases'
   * bytes, concatenated, is at most KEEP_DELTA of its size, it is stored as that delta instead,
   * unless the chains of bases would exceed DELTA_MAX_DEPTH links or DELTA_MAX_CHAIN_BYTES bytes.
   * Without the hint nothing changes. True when `id` is now stored as a delta.
   */
  suggestBase(id: Buffer, bases: Buffer | Buffer[]): boolean {
    const p = this.open.get(id.toString('latin1'));
    if (!p || p.delta || p.proposal || p.group.sealed) return false;
    const d = this.deltaOf(p, p.group.buf.subarray(p.offset, p.offset + p.length), Array.isArray(bases) ? bases : [bases]);
    if (!d) return false;
    this.detach(p, d);
    return true;
  }

  /**
   * suggestBase whose delta is compressed on the addon's threads while this writer goes on, and
   * judged (kept or not, by the same rules) once the group after the object's is sealed. For a
   * caller that need not know at once whether the delta was kept: a commit's changed small files.
   */
  proposeBase(id: Buffer, bases: Buffer | Buffer[]): void {
    const p = this.open.get(id.toString('latin1'));
    if (!this.compress || !p || p.delta || p.proposal || p.group.sealed) return;
    // A staged writer holds no lock, and handing each small delta to the addon's threads costs
    // more than compressing it: it compresses at once.
    p.proposal = this.planner.start(p, p.group.buf.subarray(p.offset, p.offset + p.length), Array.isArray(bases) ? bases : [bases], this.staged !== undefined);
    if (p.proposal) p.group.proposals++;
  }

  /** Judges the delta proposals of group `g`'s objects (proposeBase): each kept one leaves the group. */
  private settleProposals(g: Group): void {
    g.proposals = 0;
    for (const p of g.items) {
      const proposal = p.proposal;
      if (!proposal) continue;
      p.proposal = undefined;
      const d = this.planner.settle(p, g.buf.subarray(p.offset, p.offset + p.length), proposal);
      if (d) this.detach(p, d);
    }
  }

  /** Moves `p` out of its open group to be stored as delta `d`. */
  private detach(p: Pending, d: NonNullable<Pending['delta']>): void {
    p.delta = d;
    p.group.moved++;
    // A delta is read from its frame and bases: its group's buffer need not live on until the
    // delta's row is written (a row of deltas held thousands of groups: 24-39 MiB in 12,000 files).
    p.group = DETACHED;
    this.rowQueue.add({ delta: p }, d.frame.length);
  }

  /** An object's bytes, whether written by this writer or stored before (authenticated). */
  read(id: Buffer): Buffer {
    return this.unflushed(id) ?? this.objectReader().get(id);
  }

  /**
   * Seals the open group of class `c` into a frame of the row being assembled (compressed here if
   * `inline`); opens a new one. A group with delta proposals still compressing is judged at the
   * class's next seal instead (`judging`), so the writer does not wait for jobs it just started.
   */
  private seal(c: number, inline = false): void {
    const g = this.groups[c]!;
    this.groups[c] = this.compress ? this.newGroup(c) : new Group(false, PACK_TARGET);
    g.sealed = true;
    const waiting = this.judging[c];
    this.judging[c] = g.proposals > 0 && !inline ? g : undefined;
    if (waiting) this.assembleSealed(c, waiting, inline);
    if (this.judging[c] !== g) this.assembleSealed(c, g, inline);
  }

  /** Judges sealed group `g`'s delta proposals and adds its live objects to the row being assembled. */
  private assembleSealed(c: number, g: Group, inline: boolean): void {
    if (g.proposals > 0) this.settleProposals(g);
    const held = g.live();
    if (!held) return this.buffers.release(g);
    const { live, at, data } = held;
    if (c === GroupClass.Content && this.training?.hold(held)) {
      // Trained on a worker thread while the import goes on holding (dictionary-training.ts).
      if (this.training.ready) this.training.start();
      if (this.training.due) this.trainDictionary();
      return;
    }
    // A transaction's first groups are compressed here (INLINE_SEAL_BYTES).
    this.sealedBytes += data.length;
    this.assemble(c, g.compress, { live, at, data }, inline || this.sealedBytes <= INLINE_SEAL_BYTES, g);
  }

  /**
   * Adds a sealed group of class `c` (its live objects) to the row being assembled, compressed
   * on the addon's thread if `compress`, or here when `inline` (flush: the writer would only
   * wait for the thread, and under load each hand-over costs a scheduling delay).
   */
  private assemble(c: number, compress: boolean, { live, at, data }: HeldGroup, inline = false, group?: Group): void {
    // Compressed on the addon's thread while this writer goes on; collected in writeParts().
    // An edit group holds whatever chunks an edit made: random ones are not worth a job.
    compress &&= !(c === GroupClass.Edit && looksRandom(data));
    const dict = compress && (c === GroupClass.Content || c === GroupClass.Edit) ? this.dictionary() : undefined;
    const level = dict ? DICT_LEVEL : COMPRESSION_LEVEL;
    const frame = compress && inline ? zstdCompressWith(data, level, dict) : undefined;
    const job = compress && !inline ? zstdCompressStart(data, level, dict) : undefined;
    const part = { live, at, data, job, frame, dict, group };
    if (c === GroupClass.Tree && this.compress) this.rowQueue.add(part, data.length * TREE_EXPECTED_RATIO, true);
    else this.rowQueue.add(part, frame ? Math.min(frame.length, data.length) : job === undefined ? data.length : data.length * EXPECTED_RATIO);
  }

  /** Writes `parts` as one pack row and their objects' index rows. */
  private writeParts(parts: RowPart[]): void {
    if (this.staged) {
      this.staged.writes.push(() => this.writeParts(parts));
      return;
    }
    const entries = writeGroupRow({ db: this.db, statements: { insertPack: this.insertPack, insertObject: this.insertObject }, rows: this.rows, path: this.path }, parts);
    for (let k = 0; k < entries.length; k++) this.open.delete(entries[k]!.id.toString('latin1'));
    for (const part of parts) if ('group' in part && part.group) this.buffers.release(part.group);
  }

  /**
   * Stores consecutive chunks of one file: `data` holds them back to back, `lengths` their
   * sizes and `ids` their ids (32 bytes each). New chunks go to rows of their own, split into
   * rows of about CHUNK_PACK_TARGET bytes. Nothing refers to `data` once this returns.
   */
  putChunks(data: Buffer, lengths: ArrayLike<number>, ids: Buffer): void {
    const fresh: Pending[] = [];
    let freshBytes = 0;
    // Repeats inside this call: not in the index until the rows below are written.
    const here = new Set<string>();
    // New chunks in file order; a delta proposed for one (deltaSource) is compressed on the
    // addon's threads and judged up to CHUNK_PROPOSALS_AHEAD proposals later.
    const queue: Pending[] = [];
    let judged = 0;
    let proposed = 0;
    const judgeNext = (): void => {
      const p = queue[judged++]!;
      if (p.proposal) {
        proposed--;
        if (this.settleChunk(p, data)) return;
      }
      fresh.push(p);
      freshBytes += p.length;
    };
    let offset = 0;
    const none = new Group(false, 0);
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i]!;
      const id = ids.subarray(i * 32, i * 32 + 32);
      const key = id.toString('latin1');
      if (here.has(key) || this.open.has(key) || this.stored(id)) {
        this.stats.objectsReused++;
        this.stats.bytesReused += length;
        this.deltaSource?.next(id, length, false);
      } else {
        here.add(key);
        const p: Pending = { id, kind: ObjectKind.Chunk, group: none, offset, length };
        queue.push(p);
        if (this.proposeChunk(p, data.subarray(offset, offset + length))) proposed++;
        while (proposed > CHUNK_PROPOSALS_AHEAD) judgeNext();
      }
      offset += length;
    }
    while (judged < queue.length) judgeNext();
    if (fresh.length === 0) return;
    if (this.compress && fresh.length <= EDIT_CHUNKS && fresh.length < lengths.length) {
      // An edited large file: its few new chunks wait in the Edit group like small objects, so
      // the editor's suggestBase can still turn each into a delta against the chunks it replaces.
      for (const c of fresh) this.putIn(ObjectKind.Chunk, Buffer.from(c.id), data.subarray(c.offset, c.offset + c.length), GroupClass.Edit);
      return;
    }
    const rows = Math.max(1, Math.round(freshBytes / CHUNK_PACK_TARGET));
    const rowTarget = freshBytes / rows;
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < fresh.length; i++) {
      bytes += fresh[i]!.length;
      if (bytes >= rowTarget || i === fresh.length - 1) {
        if (!this.holdChunkRow(data, fresh, start, i + 1)) this.writeChunkRow(data, fresh, start, i + 1);
        start = i + 1;
        bytes = 0;
      }
    }
  }

  /**
   * Starts the delta of a new chunk of a changed large file against the old chunks at its place
   * (deltaSource), when one is tried; true if it was (settleChunk judges it).
   */
  private proposeChunk(p: Pending, data: Buffer): boolean {
    const src = this.deltaSource;
    const bases = src?.next(p.id, p.length, true);
    if (!src || !bases || bases.length === 0 || !this.compress) return false;
    p.proposal = this.planner.start(p, data, bases);
    if (!p.proposal) src.result(false);
    return p.proposal !== undefined;
  }

  /** Judges a chunk's delta proposal (proposeChunk); true if it is stored as that delta, waiting in the mixed row. */
  private settleChunk(p: Pending, data: Buffer): boolean {
    const proposal = p.proposal!;
    p.proposal = undefined;
    const d = this.planner.settle(p, data.subarray(p.offset, p.offset + p.length), proposal);
    this.deltaSource?.result(d !== undefined);
    if (!d) return false;
    p.delta = d;
    this.open.set(p.id.toString('latin1'), p);
    this.stats.objectsInserted++;
    this.stats.bytesInserted += p.length;
    this.rowQueue.add({ delta: p }, d.frame.length);
    return true;
  }

  /**
   * While an import holds content back for its dictionary, a chunk row waits too (a copy of its
   * bytes, counted in the hold's bound): most of a tree's large files come before its 4,000th
   * small one. Its chunks stay findable (`open`) until the row is written.
   */
  private holdChunkRow(data: Buffer, chunks: Pending[], from: number, to: number): boolean {
    if (!this.training?.holding) return false;
    const first = chunks[from]!.offset;
    const last = chunks[to - 1]!;
    const kept = this.keptChunkRow(data, chunks, from, to);
    if (!this.training.holdRow(last.offset + last.length - first, kept.write)) {
      kept.drop();
      // The hold of chunk rows is full: once training has started, the row waits for its
      // dictionary rather than going without it (the same frames whatever the timing).
      if (this.training.started) this.trainDictionary();
      return false;
    }
    return true;
  }

  /** A copy of chunks [from, to) of `data`, findable until `write` writes them as one row, or `drop` (keptChunks). */
  private keptChunkRow(data: Buffer, chunks: Pending[], from: number, to: number): { write: () => void; drop: () => void } {
    return keptChunks(this.open, copyChunks(data, chunks, from, to), (moved) => this.writeChunkRow(moved[0]!.group.buf, moved, 0, moved.length));
  }

  /** One chunk row (writeChunkRow): frames of about CHUNK_FRAME_TARGET bytes, each compressed if that pays. */
  private writeChunkRow(data: Buffer, chunks: Pending[], from: number, to: number): void {
    if (this.staged) {
      this.staged.writes.push(this.keptChunkRow(data, chunks, from, to).write);
      return;
    }
    writeChunkRow({ db: this.db, statements: { insertPack: this.insertPack, insertObject: this.insertObject }, rows: this.rows, plain: this.plain, compress: this.compress, dict: this.compress ? this.dictionary() : undefined, path: this.path, stats: this.stats }, data, chunks, from, to);
  }

  private stored(id: Buffer): boolean {
    let found: boolean;
    try {
      found = this.exists.get(id) !== undefined;
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    if (found) this.staged?.found(id);
    return found;
  }

  /**
   * Under the write lock, runs the writes a staging writer kept if what they rely on is as it
   * was (Staging.valid); otherwise writes nothing and returns false, and the caller writes
   * again from the start. The writer then writes directly, as any other.
   */
  applyStaged(): boolean {
    const staging = this.staged;
    this.staged = undefined;
    if (!staging) return true;
    if (!staging.valid(this.open, (id) => this.stored(id))) return false;
    for (const write of staging.writes) write();
    return true;
  }

  /** The Store's current dictionary, looked up once (inside the transaction, so gc cannot take it meanwhile). */
  private dictionary(): Dictionary | undefined {
    // While the import's dictionary trains on its worker thread, whatever would use a dictionary
    // waits for it: it is then written as if the dictionary had been trained at once.
    if (this.training?.started) this.trainDictionary();
    if (this.dict === undefined) {
      this.dict = currentDictionary(this.db, (id, kind) => this.objectReader().get(id, kind)) ?? null;
      if (this.dict) this.staged?.found(this.dict.id);
    }
    return this.dict ?? undefined;
  }

  /**
   * A transaction that wrote enough small content to a Store without a dictionary trains one
   * (dictionary-training.ts), stored now and made current: the content groups it held back and
   * those after it are compressed with it, and so are the transactions after it.
   */
  private trainDictionary(): void {
    const training = this.training!;
    this.training = undefined;
    const bytes = training.train();
    if (bytes && !hasDictionary(this.db)) {
      const dict = { id: idOf(ObjectKind.Dictionary, bytes), bytes };
      writeDictionaryRow({ insertPack: this.insertPack, insertObject: this.insertObject }, dict, this.path);
      setCurrentDictionary(this.db, dict.id);
      this.dict = dict;
    }
    for (const h of training.held) this.assemble(GroupClass.Content, true, h);
    for (const row of training.heldRows) row();
  }

  /**
   * An import of `entries` entries is about to write: a large one holds its first content back
   * until it has trained the Store's dictionary; a small one cannot train one and samples nothing.
   */
  expectImport(entries: number): void {
    this.training = this.training?.forImport(entries);
  }

  /** Writes the open groups and the row being assembled. Call before committing the transaction. */
  flush(): void {
    // The last groups are compressed here: a job started now would only be waited for.
    for (let c = 0; c < this.groups.length; c++) {
      if (this.groups[c]!.items.length > 0) this.seal(c, true);
      else if (this.judging[c]) this.assembleSealed(c, this.judging[c]!, true);
      this.judging[c] = undefined;
    }
    if (this.training) this.trainDictionary();
    this.rowQueue.flush();
    // Looked up again in the next transaction: gc may remove a dictionary no frame uses.
    this.dict = undefined;
  }
}
