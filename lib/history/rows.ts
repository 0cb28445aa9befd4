/** Typed rows of the history tables and their SQL mapping. */
export interface LayerStackRow {
  id: Buffer;
  name: string;
  headLayerId: Buffer;
  createdMs: number;
}

export interface LayerRow {
  id: Buffer;
  layerStackId: Buffer;
  seq: number;
  parentLayerId: Buffer | null;
  rootId: Buffer;
  sourceBranchId: Buffer | null;
  sourceCommitId: Buffer | null;
  createdMs: number;
}

export const LAYER_STACK_COLUMNS = 'id, name, head_layer_id AS headLayerId, created_ms AS createdMs';
export const LAYER_COLUMNS =
  'id, layer_stack_id AS layerStackId, seq, parent_layer_id AS parentLayerId, root_id AS rootId, source_branch_id AS sourceBranchId, source_commit_id AS sourceCommitId, created_ms AS createdMs';

export interface BranchRow {
  id: Buffer;
  layerStackId: Buffer;
  name: string;
  baseLayerId: Buffer;
  headCommitId: Buffer | null;
  createdMs: number;
}

export interface CommitRow {
  id: Buffer;
  rootId: Buffer;
  parentCommitId: Buffer | null;
  baseLayerId: Buffer;
  createdMs: number;
  message: string;
  /** Canonical JSON of the metadata object, or null. */
  metadata: string | null;
  author: string;
  /** 1: the id covers root, parent and base only (Commits made before format 4); 2: note and time too. */
  idVersion: number;
}

export const BRANCH_COLUMNS = 'id, layer_stack_id AS layerStackId, name, base_layer_id AS baseLayerId, head_commit_id AS headCommitId, created_ms AS createdMs';
export const COMMIT_COLUMNS =
  'id, root_id AS rootId, parent_commit_id AS parentCommitId, base_layer_id AS baseLayerId, created_ms AS createdMs, message, metadata, author, id_version AS idVersion';
