/**
 * State references: what users type where a state is expected — a Layer id or prefix, a
 * Commit id or prefix, a Branch name or id (its current state), a LayerStack name (its head), or
 * a checkpoint name (the state it pinned). This is the one place they are parsed.
 *
 * A reference may carry its kind as a prefix — `layer:`, `commit:`, `branch:`, `layerstack:`,
 * `checkpoint:` (names never hold ':') — the way git users write `heads/NAME` or `tags/NAME`.
 * Without one, a name that means two things (a checkpoint and a Branch, LayerStack or id prefix;
 * a checkpoint of several Branches) is ERR_AMBIGUOUS_ID listing the prefixed forms to use:
 * unlike git, which picks one and prints a warning an agent never reads, nothing is guessed.
 * `checkpoint:BRANCH/NAME` names the checkpoint of one Branch.
 */
import { LayerFsError } from '../errors.js';
import { NAME_PATTERN } from '../format/names.js';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch, getCommit, resolveBranch, resolveCommit } from '../history/branches.js';
import { findCheckpoints, getCheckpoint, type CheckpointRow } from '../history/rewind.js';
import { getLayer, layerIdByPrefix, layerStackByName, resolveLayer } from '../history/layerstacks.js';
import { isPruned } from '../history/retention.js';
import { resolveRemoteRef } from '../history/remote-refs.js';
import type { BranchRow } from '../history/rows.js';
import type { ReadStore } from '../store/store-read.js';

export interface ResolvedState {
  kind: 'layer' | 'commit' | 'branch';
  id: Buffer;
  rootId: Buffer;
  /** Set when the reference was a checkpoint: its Branch and name. */
  checkpoint?: { branchId: Buffer; name: string };
}

export const REF_KINDS = ['layer', 'commit', 'branch', 'layerstack', 'checkpoint'] as const;
export type RefKind = (typeof REF_KINDS)[number];

/** `KIND:REST` with a known kind, else undefined. */
export function refPrefix(ref: string): { kind: RefKind; rest: string } | undefined {
  const m = /^([a-z]+):(.+)$/.exec(ref);
  if (!m || !(REF_KINDS as readonly string[]).includes(m[1]!)) return undefined;
  return { kind: m[1] as RefKind, rest: m[2]! };
}

function layerState(store: ReadStore, id: Buffer): ResolvedState {
  return { kind: 'layer', id, rootId: getLayer(store, id)!.rootId };
}

function commitState(store: ReadStore, id: Buffer): ResolvedState {
  const commit = getCommit(store, id)!;
  if (isPruned(store, commit.id) || !store.objects.has(commit.rootId)) {
    throw new LayerFsError('ERR_PRUNED', `the state of Commit ${toHex(commit.id)} was reclaimed by db gc (retention no longer kept it)`, { id: toHex(commit.id), hint: 'pin states to keep them; see `layerfs retention show`' });
  }
  return { kind: 'commit', id: commit.id, rootId: commit.rootId };
}

function checkpointState(store: ReadStore, cp: CheckpointRow): ResolvedState {
  const s = cp.commitId ? commitState(store, cp.commitId) : layerState(store, cp.baseLayerId);
  return { ...s, rootId: cp.rootId, checkpoint: { branchId: cp.branchId, name: cp.name } };
}

function notFound(what: string, ref: string, hint: string): LayerFsError {
  return new LayerFsError('ERR_NOT_FOUND', `no ${what} matches ${JSON.stringify(ref)}`, { id: ref, hint });
}

/** `checkpoint:NAME` or `checkpoint:BRANCH/NAME`. */
export function resolveCheckpointRef(store: ReadStore, rest: string): CheckpointRow & { branchName: string } {
  const slash = rest.lastIndexOf('/');
  if (slash >= 0) {
    const b = resolveBranch(store, rest.slice(0, slash));
    const cp = getCheckpoint(store, b.id, rest.slice(slash + 1));
    if (!cp) throw notFound('checkpoint', `checkpoint:${rest}`, `see \`layerfs checkpoints ${b.name}\``);
    return { ...cp, branchName: b.name };
  }
  const found = findCheckpoints(store, rest);
  if (found.length > 1) {
    const candidates = found.map((c) => `checkpoint:${c.branchName}/${c.name}`);
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `several Branches have a checkpoint named ${rest}: ${candidates.join(', ')}`, { id: rest, candidates, hint: 'name the Branch too: checkpoint:BRANCH/NAME' });
  }
  if (!found[0]) throw notFound('checkpoint', `checkpoint:${rest}`, 'see `layerfs checkpoints BRANCH`; create one with `layerfs checkpoint BRANCH NAME`');
  return found[0];
}

function resolvePrefixed(store: ReadStore, kind: RefKind, rest: string): ResolvedState {
  switch (kind) {
    case 'layer': {
      const l = resolveLayer(store, rest);
      if (!l) throw notFound('Layer', rest, 'give a Layer id or prefix, or a label LAYERSTACK#SEQ; see `layerfs query layers`');
      return layerState(store, l.id);
    }
    case 'commit': {
      const c = resolveCommit(store, rest);
      if (!c) throw notFound('Commit', rest, 'give a Commit id or prefix; see `layerfs log BRANCH`');
      return commitState(store, c.id);
    }
    case 'branch': {
      const b = resolveBranch(store, rest);
      return { kind: 'branch', id: b.id, rootId: branchRoot(store, b) };
    }
    case 'layerstack': {
      const head = layerStackByName(store, rest)?.headLayerId;
      if (!head) throw notFound('LayerStack', rest, 'see `layerfs query layerstacks`');
      return layerState(store, head);
    }
    case 'checkpoint':
      return checkpointState(store, resolveCheckpointRef(store, rest));
  }
}

/** What a bare name or hex string matches, each as the prefixed form that names it alone. */
interface Matches {
  layerId?: Buffer;
  commitId?: Buffer;
  branch?: BranchRow;
  stackHead?: Buffer;
  checkpoints: (CheckpointRow & { branchName: string })[];
}

/** The lookups a bare reference gets; Branch and LayerStack names only when no id matched (as always). */
function matchesOf(store: ReadStore, ref: string): Matches {
  const m: Matches = { layerId: layerIdByPrefix(store, ref), commitId: resolveCommit(store, ref)?.id, checkpoints: [] };
  if (NAME_PATTERN.test(ref)) m.checkpoints = findCheckpoints(store, ref);
  if (m.layerId || m.commitId) return m;
  m.stackHead = layerStackByName(store, ref)?.headLayerId;
  try {
    m.branch = resolveBranch(store, ref);
  } catch (e) {
    // A deleted Branch's name says so, unless a checkpoint answers to it.
    const missing = e instanceof LayerFsError && (e.code === 'ERR_NOT_FOUND' || (e.code === 'ERR_DELETED' && m.checkpoints.length > 0));
    if (!missing) throw e;
  }
  return m;
}

function candidates(ref: string, m: Matches): string[] {
  return [
    ...(m.layerId ? [`layer:${toHex(m.layerId)}`] : []),
    ...(m.commitId ? [`commit:${toHex(m.commitId)}`] : []),
    ...(m.stackHead ? [`layerstack:${ref}`] : []),
    ...(m.branch ? [`branch:${ref}`] : []),
    ...m.checkpoints.map((c) => (m.checkpoints.length > 1 ? `checkpoint:${c.branchName}/${c.name}` : `checkpoint:${c.name}`)),
  ];
}

/**
 * The ambiguities a bare reference can have. Layer and Commit ids, and a LayerStack and a
 * Branch, were ambiguous before checkpoints existed; a Branch or LayerStack name still shadows a
 * hex prefix as it always did. A checkpoint is ambiguous with anything else it matches.
 */
function checkAmbiguity(ref: string, m: Matches): void {
  const ids = Number(!!m.layerId) + Number(!!m.commitId);
  const names = Number(!!m.stackHead) + Number(!!m.branch);
  const cps = m.checkpoints.length;
  if (cps === 0 && ids < 2 && names < 2) return;
  if (cps === 0 && ids === 2) throw new LayerFsError('ERR_AMBIGUOUS_ID', `${ref} matches both a Layer and a Commit`, { id: ref, candidates: candidates(ref, { ...m, stackHead: undefined, branch: undefined }), hint: 'give more hex digits, or prefix it: layer:ID or commit:ID' });
  if (cps === 0 && names === 2 && ids === 0) throw new LayerFsError('ERR_AMBIGUOUS_ID', `${ref} names both a LayerStack and a Branch`, { id: ref, candidates: candidates(ref, m), hint: 'prefix it: layerstack:NAME or branch:NAME' });
  if (cps === 0) return;
  if (cps === 1 && ids + names === 0) return;
  const all = candidates(ref, m);
  throw new LayerFsError('ERR_AMBIGUOUS_ID', `${ref} names ${cps > 1 ? `checkpoints of ${cps} Branches` : 'a checkpoint'}${ids + names > 0 ? ' and also a Branch, LayerStack or id' : ''}: ${all.join(', ')}`, {
    id: ref,
    candidates: all,
    hint: 'prefix it with its kind: checkpoint:NAME (checkpoint:BRANCH/NAME), branch:NAME, layerstack:NAME, commit:ID or layer:ID',
  });
}

export function resolveState(store: ReadStore, ref: string): ResolvedState {
  if (typeof ref !== 'string' || ref.length === 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'a state reference must be a non-empty string');
  const prefixed = refPrefix(ref);
  if (prefixed) return resolvePrefixed(store, prefixed.kind, prefixed.rest);
  if (ref.includes('#')) {
    const l = resolveLayer(store, ref);
    if (l) return layerState(store, l.id);
    throw new LayerFsError('ERR_NOT_FOUND', `no Layer labelled ${JSON.stringify(ref)}`, { id: ref, hint: 'labels are LAYERSTACK#SEQ, as `layerfs query layers` prints them' });
  }
  const remote = resolveRemoteRef(store, ref);
  if (remote?.kind === 'layerstack') return layerState(store, remote.head!);
  if (remote?.head) return { kind: 'commit', id: remote.head, rootId: getCommit(store, remote.head)!.rootId };
  if (remote?.baseLayerId) return layerState(store, remote.baseLayerId);
  const m = matchesOf(store, ref);
  checkAmbiguity(ref, m);
  if (m.checkpoints[0]) return checkpointState(store, m.checkpoints[0]);
  if (m.layerId) return layerState(store, m.layerId);
  if (m.commitId) return commitState(store, m.commitId);
  if (m.branch) return { kind: 'branch', id: m.branch.id, rootId: branchRoot(store, m.branch) };
  if (m.stackHead) return layerState(store, m.stackHead);
  throw notFound('Layer, Commit, Branch, LayerStack or checkpoint', ref, 'give a Layer id or label (LAYERSTACK#SEQ), a Commit id, a Branch or LayerStack name, or a checkpoint name; see `layerfs query layers|commits|branches` and `layerfs checkpoints BRANCH`');
}

/**
 * Where a log starts: a Branch (its head) or a checkpoint (its Commit, on its Branch). Parsed
 * by the rules above; anything else is the Branch lookup's own error.
 */
export function resolveLogStart(store: ReadStore, ref: string): { branch: BranchRow; head: Buffer | null } {
  const prefixed = refPrefix(ref);
  if (prefixed?.kind === 'checkpoint') {
    const cp = resolveCheckpointRef(store, prefixed.rest);
    return { branch: getBranch(store, cp.branchId)!, head: cp.commitId };
  }
  if (prefixed && prefixed.kind !== 'branch') throw new LayerFsError('ERR_INVALID_ARGUMENT', `a log starts at a Branch or a checkpoint, not a ${prefixed.kind}`, { id: ref, hint: 'give a Branch name, or checkpoint:NAME' });
  const name = prefixed?.rest ?? ref;
  const cps = prefixed || !NAME_PATTERN.test(ref) ? [] : findCheckpoints(store, ref);
  let branch: BranchRow | undefined;
  try {
    branch = resolveBranch(store, name);
  } catch (e) {
    if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') || cps.length === 0) throw e;
  }
  if (branch && cps.length > 0) checkAmbiguity(ref, { branch, checkpoints: cps });
  if (branch) return { branch, head: branch.headCommitId };
  checkAmbiguity(ref, { checkpoints: cps });
  return { branch: getBranch(store, cps[0]!.branchId)!, head: cps[0]!.commitId };
}

export function describeState(s: ResolvedState): string {
  return `${s.kind}:${toHex(s.id)}`;
}

/**
 * The state a state's changes are counted from: a Commit's or Branch's base Layer (where its
 * Branch was forked), a Layer's parent. A LayerStack's first Layer has none.
 */
export function forkBase(store: ReadStore, s: ResolvedState): ResolvedState | undefined {
  let layerId: Buffer | null | undefined;
  if (s.kind === 'commit') layerId = resolveCommit(store, toHex(s.id))?.baseLayerId;
  else if (s.kind === 'branch') layerId = getBranch(store, s.id)?.baseLayerId;
  else layerId = getLayer(store, s.id)?.parentLayerId;
  if (!layerId) return undefined;
  return { kind: 'layer', id: layerId, rootId: getLayer(store, layerId)!.rootId };
}
