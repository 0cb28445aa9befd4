/**
 * LayerStacks and Layers: the shared, linear history. A LayerStack row names its head Layer; the
 * genesis Layer is made by init (layerstack-init.ts: empty or imported), later Layers only by Add.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { prepared } from '../store/store-file.js';
import type { ReadStore } from '../store/store-read.js';
import { layerId, uuidv7 } from './ids.js';
import { resolveRemoteRef } from './remote-refs.js';
import { uniqueByPrefix } from './resolve.js';
import { deletedError, deletedLayerStack } from './tombstones.js';
import { LAYER_COLUMNS, LAYER_STACK_COLUMNS, type LayerRow, type LayerStackRow } from './rows.js';

export function getLayerStack(store: ReadStore, id: Buffer): LayerStackRow | undefined {
  return store.db.prepare(`SELECT ${LAYER_STACK_COLUMNS} FROM layer_stacks WHERE id = ?`).get(id) as LayerStackRow | undefined;
}

export function getLayer(store: ReadStore, id: Buffer): LayerRow | undefined {
  return prepared(store.db, `SELECT ${LAYER_COLUMNS} FROM layers WHERE id = ?`).get(id) as LayerRow | undefined;
}

/** The Layer whose id `text` (4 or more hex digits) starts; several are ERR_AMBIGUOUS_ID. */
export function layerIdByPrefix(store: ReadStore, text: string): Buffer | undefined {
  return uniqueByPrefix(text, 32, 'Layer', (lo, hi, limit) => store.db.prepare('SELECT id FROM layers WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?').pluck().all(lo, hi, limit) as Buffer[]);
}

/** The LayerStack named `name` (names are unique), or undefined. */
export function layerStackByName(store: ReadStore, name: string): LayerStackRow | undefined {
  return store.db.prepare(`SELECT ${LAYER_STACK_COLUMNS} FROM layer_stacks WHERE name = ?`).get(name) as LayerStackRow | undefined;
}

/** How many LayerStacks and Layers the Store holds. */
export function historyCounts(store: ReadStore): { layerStacks: number; layers: number } {
  return store.db.prepare('SELECT (SELECT count(*) FROM layer_stacks) AS layerStacks, (SELECT count(*) FROM layers) AS layers').get() as { layerStacks: number; layers: number };
}

export function listLayerStacks(store: ReadStore): LayerStackRow[] {
  return store.db.prepare(`SELECT ${LAYER_STACK_COLUMNS} FROM layer_stacks ORDER BY created_ms, name`).all() as LayerStackRow[];
}

export function listLayers(store: ReadStore, layerStackId?: Buffer): LayerRow[] {
  if (layerStackId) return store.db.prepare(`SELECT ${LAYER_COLUMNS} FROM layers WHERE layer_stack_id = ? ORDER BY seq`).all(layerStackId) as LayerRow[];
  return store.db.prepare(`SELECT ${LAYER_COLUMNS} FROM layers ORDER BY created_ms, layer_stack_id, seq`).all() as LayerRow[];
}

/** A LayerStack by name or by (prefix of) id. */
export function resolveLayerStack(store: ReadStore, ref: string): LayerStackRow {
  const byName = layerStackByName(store, ref);
  if (byName) return byName;
  const id = uniqueByPrefix(ref, 16, 'LayerStack', (lo, hi, limit) => store.db.prepare('SELECT id FROM layer_stacks WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?').pluck().all(lo, hi, limit) as Buffer[]);
  const row = id && getLayerStack(store, id);
  if (!row) {
    const gone = deletedLayerStack(store, ref);
    if (gone) throw deletedError(gone);
    throw new LayerFsError('ERR_NOT_FOUND', `no LayerStack named or with id ${JSON.stringify(ref)}`, { id: ref, hint: 'list them with `layerfs query layerstacks`' });
  }
  return row;
}

/** A Layer by (prefix of) id; a LayerStack name stands for its head Layer. */
/** A Layer by id or prefix, by label `STACK#SEQ` (as `query layers` prints it), or a LayerStack name (its head). */
export function resolveLayer(store: ReadStore, ref: string): LayerRow | undefined {
  const label = /^(.+)#(\d{1,15})$/.exec(ref);
  if (label) {
    return store.db
      .prepare(`SELECT ${LAYER_COLUMNS.replace(/(^|, )/g, '$1l.')} FROM layers l JOIN layer_stacks s ON s.id = l.layer_stack_id WHERE s.name = ? AND l.seq = ?`)
      .get(label[1], Number(label[2])) as LayerRow | undefined;
  }
  const remote = resolveRemoteRef(store, ref, ['layerstack']);
  if (remote) return getLayer(store, remote.head!);
  const id = layerIdByPrefix(store, ref);
  if (id) return getLayer(store, id);
  const stack = layerStackByName(store, ref)?.headLayerId;
  return stack ? getLayer(store, stack) : undefined;
}


/**
 * Publishes `rootId` as the genesis Layer of a new LayerStack `name`, inside the caller's write
 * transaction, after every object the root reaches has been written (the name is the caller's
 * to check: it is unique in the table).
 */
export function publishGenesisLayer(store: ReadStore, name: string, rootId: Buffer): { stackId: Buffer; id: Buffer } {
  const stackId = uuidv7();
  const id = layerId(stackId, null, rootId);
  const now = Date.now();
  // The Layer row and the LayerStack row that makes it visible come in the same transaction.
  store.db.prepare('INSERT INTO layer_stacks (id, name, head_layer_id, created_ms) VALUES (?, ?, ?, ?)').run(stackId, name, id, now);
  store.db
    .prepare('INSERT INTO layers (id, layer_stack_id, seq, parent_layer_id, root_id, source_branch_id, source_commit_id, created_ms) VALUES (?, ?, 0, NULL, ?, NULL, NULL, ?)')
    .run(id, stackId, rootId, now);
  return { stackId, id };
}

export function describeLayer(l: LayerRow): Record<string, unknown> {
  return { id: toHex(l.id), seq: l.seq, rootId: toHex(l.rootId), parentLayerId: l.parentLayerId ? toHex(l.parentLayerId) : null };
}
