/** What a serving thread and its prestore thread share (prestore.ts, prestore-worker.ts). */
import type { MessagePort } from 'node:worker_threads';
import type { ContentForm, Inode } from '../store/index.js';

/** Int32 cells in shared memory. */
export enum PrestoreCell {
  /** Set by the serving thread: drop the job at its next file (its transaction rolls back). */
  Stop = 0,
  /** 1 from when a job is posted until its result is posted (or the thread is gone). */
  Busy = 1,
  /** 1 once the thread has its Store open and takes jobs; 2 when it could not open it; 3 once it closed it and is ending. */
  Ready = 2,
}

export const PRESTORE_CELLS = 3;

export interface PrestoreData {
  storePath: string;
  cells: SharedArrayBuffer;
  /** Where results go; the serving thread takes them with receiveMessageOnPort. */
  results: MessagePort;
  /** The daemon's checkpointer for this Store (kernel-spare.ts). */
  checkpoints?: SharedArrayBuffer;
}

/** A file to store ahead: its spool file as it is now, and the stored file it is a new version of. */
export interface PrestoreJobFile {
  serial: number;
  /** The file's edit number when it was handed over (content.ts FileData.edit). */
  edit: number;
  path: string;
  size: number;
  /** The stored file offered as its delta base, by serial (-1: none). */
  base: number;
  predecessor?: Inode;
}

export type ToPrestore = { type: 'job'; files: PrestoreJobFile[] } | { type: 'close' };

export interface PrestoredFile {
  serial: number;
  edit: number;
  base: number;
  form: ContentForm;
  id: Uint8Array | null;
  size: number;
}

/** A job's result: what it stored, at which gc epoch; or why it stored nothing. */
export type FromPrestore = { type: 'stored'; epoch: number; files: PrestoredFile[]; ms: number; heap: number; external: number } | { type: 'stopped' } | { type: 'failed'; message: string };
