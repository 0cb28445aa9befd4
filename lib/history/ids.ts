/**
 * History ids. Layer and Commit ids are derived from their parents and root, so the same history
 * gives the same ids; LayerStack, Branch and Workspace ids are random UUIDv7 (time-ordered).
 */
import { randomBytes } from 'node:crypto';
import { objectId } from '../native/index.js';

export const LAYER_TAG = 'layerfs/layer/v1';
export const COMMIT_TAG = 'layerfs/commit/v1';

const ABSENT = Buffer.from([0]);
const PRESENT = Buffer.from([1]);

function opt(id: Buffer | null): Buffer[] {
  return id ? [PRESENT, id] : [ABSENT];
}

export function layerId(layerStackId: Buffer, parent: Buffer | null, root: Buffer): Buffer {
  return objectId(LAYER_TAG, layerStackId, ...opt(parent), root);
}

export function commitId(root: Buffer, parent: Buffer | null, baseLayer: Buffer): Buffer {
  return objectId(COMMIT_TAG, root, ...opt(parent), baseLayer);
}

export function uuidv7(): Buffer {
  const b = randomBytes(16);
  const ms = BigInt(Date.now());
  b.writeUIntBE(Number(ms >> 16n), 0, 4);
  b.writeUInt16BE(Number(ms & 0xffffn), 4);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return b;
}
