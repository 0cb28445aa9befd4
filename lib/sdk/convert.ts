/** Row → public type conversions (hex ids, ISO times). */
import { toHex } from '../format/hex.js';
import type { BranchRow, CommitRow, LayerRow, LayerStackRow } from '../history/rows.js';
import type { WorkspaceRow } from '../workspace/index.js';
import { INODE_KIND_NAMES, InodeKind, type Inode } from '../store/tree/inode.js';
import type { BranchInfo, CommitInfo, EntryInfo, EntryKind, LayerInfo, LayerStackInfo, WorkspaceInfo } from './types.js';

const hexOrNull = (b: Buffer | null): string | null => (b ? toHex(b) : null);
const iso = (ms: number): string => new Date(ms).toISOString();

export function layerStackInfo(r: LayerStackRow): LayerStackInfo {
  return { id: toHex(r.id), name: r.name, headLayerId: toHex(r.headLayerId), createdAt: iso(r.createdMs) };
}

export function layerInfo(r: LayerRow, stackName: string): LayerInfo {
  return {
    id: toHex(r.id),
    layerStackId: toHex(r.layerStackId),
    layerStack: stackName,
    seq: r.seq,
    parentLayerId: hexOrNull(r.parentLayerId),
    rootId: toHex(r.rootId),
    sourceBranchId: hexOrNull(r.sourceBranchId),
    sourceCommitId: hexOrNull(r.sourceCommitId),
    createdAt: iso(r.createdMs),
  };
}

const KIND_NAMES: Record<InodeKind, EntryKind> = INODE_KIND_NAMES;

export function entryInfo(name: Buffer, serial: number, n: Inode): EntryInfo {
  const e: EntryInfo = {
    name: name.toString('utf8'),
    nameBytes: name,
    kind: KIND_NAMES[n.kind],
    mode: n.mode,
    uid: n.uid,
    gid: n.gid,
    size: n.size,
    mtimeNs: n.mtimeNs,
    nlink: n.nlink,
    serial,
  };
  if (n.target) e.target = n.target.toString('utf8');
  return e;
}

export function branchInfo(r: BranchRow, stackName: string, rootId: Buffer): BranchInfo {
  return {
    id: toHex(r.id),
    name: r.name,
    layerStackId: toHex(r.layerStackId),
    layerStack: stackName,
    baseLayerId: toHex(r.baseLayerId),
    headCommitId: hexOrNull(r.headCommitId),
    rootId: toHex(rootId),
    createdAt: iso(r.createdMs),
  };
}

export function commitInfo(r: CommitRow): CommitInfo {
  return {
    id: toHex(r.id),
    rootId: toHex(r.rootId),
    parentCommitId: hexOrNull(r.parentCommitId),
    baseLayerId: toHex(r.baseLayerId),
    createdAt: iso(r.createdMs),
    message: r.message,
    metadata: r.metadata === null ? null : (JSON.parse(r.metadata) as Record<string, unknown>),
    author: r.author,
  };
}

export function workspaceInfo(r: WorkspaceRow, branchName: string, state: WorkspaceInfo['state']): WorkspaceInfo {
  return {
    id: toHex(r.id),
    branchId: toHex(r.branchId),
    branch: branchName,
    path: r.path,
    projection: r.projection,
    state,
    baseRootId: toHex(r.baseRootId),
    expectedHeadId: hexOrNull(r.expectedHeadId),
    createdAt: iso(r.createdMs),
  };
}

export { hexOrNull };
