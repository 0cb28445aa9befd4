/**
 * Files created, written and given their owner, mode and times by the addon's background
 * threads (native/napi_file_writer.cc), while the caller decodes the next ones: the many small
 * files of an export or a materialized Workspace cost the kernel more than their bytes, and that
 * work then runs beside the decode. Queued bytes are bounded; the first failure is kept and
 * reported by `put` (false) and `drain`.
 */
import { native } from './binding.js';

export interface FileWriterFailure {
  path: Buffer;
  errno: number;
}

export class FileWriter {
  private handle: unknown;

  constructor(threads: number, limitBytes: number) {
    this.handle = native.fileWriterOpen(threads, limitBytes);
  }

  /**
   * Queues the file `path` (absent: created with O_EXCL, never following a symlink) holding the
   * concatenated `pieces` (copied now), then owner (`chown`), mode and mtime (atime = mtime).
   * False when an earlier file failed: nothing is queued, `drain` tells which.
   */
  put(path: Buffer, pieces: Uint8Array[], mode: number, uid: number, gid: number, mtimeNs: bigint, chown: boolean): boolean {
    return native.fileWriterPut(this.handle, path, pieces, mode, uid, gid, mtimeNs, chown);
  }

  /** Waits until every queued file is written: null, or the first failure. */
  drain(): FileWriterFailure | null {
    const r = native.fileWriterDrain(this.handle);
    return r === null ? null : { path: r[0], errno: r[1] };
  }

  /** Waits for the queue and ends the threads; the writer cannot be used after. */
  close(): void {
    if (this.handle === undefined) return;
    native.fileWriterClose(this.handle);
    this.handle = undefined;
  }
}
