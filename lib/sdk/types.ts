/** Public result types of the SDK. Ids are lowercase hex strings; times are ISO-8601. */
import type { Receipt } from '../monitor/receipt.js';

export type { Receipt };

export interface LayerStackInfo {
  id: string;
  name: string;
  headLayerId: string;
  createdAt: string;
}

export interface LayerInfo {
  id: string;
  layerStackId: string;
  layerStack: string;
  seq: number;
  parentLayerId: string | null;
  rootId: string;
  sourceBranchId: string | null;
  sourceCommitId: string | null;
  createdAt: string;
}

export type EntryKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'chardev' | 'blockdev';

export interface EntryInfo {
  /** The name as UTF-8 text (invalid sequences replaced); `nameBytes` has the exact bytes. */
  name: string;
  nameBytes: Buffer;
  kind: EntryKind;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeNs: bigint;
  nlink: number;
  serial: number;
  target?: string;
}

export interface InitReceipt extends Receipt {
  outcome: 'Created';
  layerStack: LayerStackInfo;
  layer: LayerInfo;
  files: number;
  directories: number;
  symlinks: number;
  specials: number;
  hardLinks: number;
  bytes: number;
  skipped: string[];
}

export interface StoreInfoResult {
  path: string;
  formatVersion: number;
  storeId: string;
  createdAt: string;
  layerStacks: number;
  layers: number;
  objects: number;
  fileBytes: number;
}

export interface ExportReceipt extends Receipt {
  outcome: 'Exported';
  target: string;
  files: number;
  directories: number;
  symlinks: number;
  specials: number;
  hardLinks: number;
  bytes: number;
}

export interface VerifyResult {
  ok: boolean;
  states: number;
  objectsChecked: number;
  bytesChecked: number;
  sqliteCheck: string;
  damaged: { objectId: string; message: string; states: string[] }[];
}
