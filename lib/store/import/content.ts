/**
 * A scanned regular file's content as objects: one blob below SMALL_FILE_THRESHOLD, else chunks
 * under an extent tree. Files the scan returned whole are stored from memory; larger ones are
 * streamed (large-file.ts).
 */
import { chunkAndHash } from '../../native/chunker.js';
import { scanPaths, type ScanEntryOk } from '../../native/scan.js';
import { LayerFsError } from '../../errors.js';
import { ObjectKind, type ObjectWriter } from '../objects.js';
import { ExtentTreeBuilder } from '../tree/extents.js';
import { ContentForm, SMALL_FILE_THRESHOLD } from '../tree/inode.js';
import { readSmallFileSync, storeLargeFile, storeLargeFileAhead, storeLargeFileSync } from './large-file.js';

export { SMALL_FILE_THRESHOLD };

export interface StoredContent {
  form: ContentForm;
  content: Buffer | null;
}

type Save = (node: Buffer) => Buffer;

/** Content the scan returned whole (`data` and `digest`), or an empty file. */
export function storeInMemory(e: ScanEntryOk, w: ObjectWriter): StoredContent {
  if (e.size === 0) return { form: ContentForm.None, content: null };
  return storeScanned(e as ScanEntryOk & { data: Buffer }, w, (node) => w.add(ObjectKind.Extents, node));
}

function storeScanned(e: ScanEntryOk & { data: Buffer }, w: Pick<ObjectWriter, 'put' | 'putChunks'>, save: Save): StoredContent {
  const d = e.digest!;
  if (!d.chunked) {
    w.put(ObjectKind.Blob, d.contentId, e.data);
    return { form: ContentForm.Whole, content: d.contentId };
  }
  const lengths = d.chunks.map((c) => c.length);
  const ids = Buffer.concat(d.chunks.map((c) => c.id));
  w.putChunks(e.data, lengths, ids);
  const tree = new ExtentTreeBuilder(save);
  for (let i = 0; i < lengths.length; i++) tree.push(ids.subarray(i * 32, i * 32 + 32), lengths[i]!);
  return { form: ContentForm.Extents, content: tree.finish() };
}

function sameFile(a: ScanEntryOk, b: ScanEntryOk): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/**
 * Stores a regular file's content. A file the scan left unread (over its size or batch budget)
 * is read now and must still be the file the scan described, else ERR_FILE_CHANGED.
 */
export async function storeContent(e: ScanEntryOk, path: Buffer, w: ObjectWriter, clock?: { waitMs: number }): Promise<StoredContent> {
  const save: Save = (node) => w.add(ObjectKind.Extents, node);
  if (e.size === 0) return { form: ContentForm.None, content: null };
  if (e.data && e.digest) return storeScanned(e as ScanEntryOk & { data: Buffer }, w, save);
  if (e.size >= SMALL_FILE_THRESHOLD) return { form: ContentForm.Extents, content: await storeLargeFile(path, e, w, clock) };
  // A small file left out of its batch by the batch's data budget: one read of it alone.
  const t = performance.now();
  const [again] = await scanPaths([path], { smallFileThreshold: SMALL_FILE_THRESHOLD, xattrs: false });
  if (clock) clock.waitMs += performance.now() - t;
  if (again?.error) throw new LayerFsError(again.error.code, again.error.message, { path: again.error.path, errno: again.error.errno });
  if (!again?.data || !sameFile(e, again)) {
    throw new LayerFsError('ERR_FILE_CHANGED', `${path.toString()} changed while it was read`, { path: path.toString(), hint: 'retry when the file is quiet' });
  }
  return storeScanned(again as ScanEntryOk & { data: Buffer }, w, save);
}

/**
 * Where storeFileContent puts objects: an ObjectWriter, or a sink that only names them (idOf),
 * which gives a file's content identity exactly as a commit would store it.
 */
export type ContentSink = Pick<ObjectWriter, 'add' | 'put' | 'putChunks'>;

/** Synchronous form for callers that cannot await: files the scan did not read are read here. */
export function storeFileContent(e: ScanEntryOk, path: Buffer, w: ContentSink, save: Save = (node) => w.add(ObjectKind.Extents, node)): StoredContent {
  if (e.size === 0) return { form: ContentForm.None, content: null };
  if (e.data && e.digest) return storeScanned(e as ScanEntryOk & { data: Buffer }, w, save);
  if (e.size >= SMALL_FILE_THRESHOLD) return { form: ContentForm.Extents, content: storeLargeFileSync(path, e, w, save) };
  const data = readSmallFileSync(path, e);
  return { form: ContentForm.Whole, content: w.add(ObjectKind.Blob, data) };
}

/**
 * storeFileContent with a large file the scan did not read streamed through the addon's threads
 * (storeLargeFileAhead), this thread waiting for each piece; `pause` runs between its pieces.
 */
export function storeFileContentAhead(e: ScanEntryOk, path: Buffer, w: ContentSink, pause?: () => void): StoredContent {
  if (e.size < SMALL_FILE_THRESHOLD || (e.data && e.digest)) return storeFileContent(e, path, w);
  return { form: ContentForm.Extents, content: storeLargeFileAhead(path, e, w, (node) => w.add(ObjectKind.Extents, node), pause) };
}

/**
 * Stores bytes held in memory as file content (a merged text file, a range edit): one blob
 * below SMALL_FILE_THRESHOLD, else FastCDC chunks under an extent tree, exactly as an import of
 * the same bytes would store them.
 */
export function storeBytes(data: Buffer, w: ObjectWriter): StoredContent {
  if (data.length === 0) return { form: ContentForm.None, content: null };
  if (data.length < SMALL_FILE_THRESHOLD) return { form: ContentForm.Whole, content: w.add(ObjectKind.Blob, data) };
  const chunks = chunkAndHash(data);
  const ids = Buffer.concat(chunks.map((c) => c.id));
  w.putChunks(data, chunks.map((c) => c.length), ids);
  const tree = new ExtentTreeBuilder((node) => w.add(ObjectKind.Extents, node));
  for (const c of chunks) tree.push(c.id, c.length);
  return { form: ContentForm.Extents, content: tree.finish() };
}
