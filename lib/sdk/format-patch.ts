/**
 * format-patch: one mbox patch per Commit of a Branch, as `git format-patch` writes them, so
 * `git am` applies the series to a git repository of the base and records each Commit's
 * message, author and time. Binary changes are full GIT binary patches (git am needs them).
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchLog, formatStat, getLayer, resolveBranch, resolveCommit, type CommitRow } from '../history/index.js';
import type { Store } from '../store/store.js';
import { formatPairs, statePairs } from './patch.js';

export interface FormatPatchOptions {
  /** Only Commits after this one (exclusive), like git's `<since>..`; default: every Commit of the Branch. */
  since?: string;
}

export interface FormatPatchResult {
  outDir: string;
  /** Patch files written, in order (apply them in this order). */
  files: string[];
  /** Commit ids, one per file. */
  commits: string[];
  /** Commits that change nothing git can see (only directories, times or owners), left out. */
  empty: string[];
}

/** "Name <email>" from an author string; a bare address or name gets the other half made up. */
export function authorParts(author: string): { name: string; email: string } {
  const m = /^\s*(.*?)\s*<([^<>]*)>\s*$/.exec(author);
  if (m) return { name: m[1] || m[2]!, email: m[2]! };
  const a = author.trim() || 'layerfs';
  if (/^[^\s@]+@[^\s@]+$/.test(a)) return { name: a.split('@')[0]!, email: a };
  return { name: a, email: `${a.replace(/\s+/g, '.')}@localhost` };
}

const ascii = (s: string) => /^[\x20-\x7e]*$/.test(s);

/** A header value as RFC 2047 encoded words when it is not plain ASCII. */
function encodeWord(s: string): string {
  return ascii(s) ? s : `=?UTF-8?B?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

function mailbox(author: string): string {
  const { name, email } = authorParts(author);
  const n = ascii(name) && /[^\w !#$%&'*+\-/=?^`{|}~]/.test(name) ? `"${name.replace(/[\\"]/g, '\\$&')}"` : encodeWord(name);
  return `${n} <${email}>`;
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function rfc2822(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[d.getUTCDay()]}, ${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

/** Subject (the first paragraph on one line) and body, as git splits a message. */
export function splitMessage(message: string, id: string): { subject: string; body: string } {
  const text = message.replace(/\r\n/g, '\n').replace(/^\n+/, '');
  const blank = text.search(/\n\s*\n/);
  const first = blank < 0 ? text : text.slice(0, blank);
  const subject = first.split('\n').map((l) => l.trim()).join(' ').trim() || `layerfs Commit ${id.slice(0, 12)}`;
  const body = blank < 0 ? '' : text.slice(blank).replace(/^\s*\n/, '').replace(/\s+$/, '');
  return { subject, body: body ? body + '\n' : '' };
}

function slug(subject: string): string {
  return subject.replace(/[^A-Za-z0-9._]+/g, '-').replace(/^[-.]+|[-.]+$/g, '').slice(0, 52).replace(/[-.]+$/, '') || 'patch';
}

/** Writes the series; the directory is created if needed (existing patch files are replaced). */
export function formatPatches(store: Store, branch: string, outDir: string, opts: FormatPatchOptions = {}): FormatPatchResult {
  const b = resolveBranch(store, branch);
  const log = branchLog(store, b).reverse();
  let start = 0;
  if (opts.since !== undefined) {
    const since = resolveCommit(store, opts.since);
    if (!since) throw new LayerFsError('ERR_NOT_FOUND', `no Commit ${JSON.stringify(opts.since)}`, { id: opts.since, hint: 'see `layerfs log BRANCH`' });
    const at = log.findIndex((c) => c.id.equals(since.id));
    if (at < 0) throw new LayerFsError('ERR_NOT_FOUND', `Commit ${toHex(since.id)} is not in the history of Branch ${b.name}`, { id: toHex(since.id), hint: `see \`layerfs log ${b.name}\`` });
    start = at + 1;
  }
  const parentRoot = (c: CommitRow): Buffer => (c.parentCommitId ? resolveCommit(store, toHex(c.parentCommitId))!.rootId : getLayer(store, c.baseLayerId)!.rootId);
  const series: { c: CommitRow; patch: Buffer; stat: string[] }[] = [];
  const empty: string[] = [];
  for (const c of log.slice(start)) {
    const skipped: string[] = [];
    const r = formatPairs(statePairs(store, parentRoot(c), c.rootId, [], skipped), { binary: true, fullIndex: true }, skipped);
    if (r.files.length === 0) empty.push(toHex(c.id));
    else series.push({ c, patch: r.patch, stat: formatStat(r.files, 72) });
  }
  const dir = resolve(outDir);
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  series.forEach(({ c, patch, stat }, i) => {
    const id = toHex(c.id);
    const { subject, body } = splitMessage(c.message, id);
    const n = series.length > 1 ? `[PATCH ${i + 1}/${series.length}]` : '[PATCH]';
    const headers = [`From ${id} Mon Sep 17 00:00:00 2001`, `From: ${mailbox(c.author)}`, `Date: ${rfc2822(c.createdMs)}`, `Subject: ${n} ${encodeWord(subject)}`];
    if (!ascii(subject + body + c.author)) headers.push('MIME-Version: 1.0', 'Content-Type: text/plain; charset=UTF-8', 'Content-Transfer-Encoding: 8bit');
    const head = `${headers.join('\n')}\n\n${body ? body + '\n' : ''}---\n${stat.join('\n')}\n\n`;
    const file = join(dir, `${String(i + 1).padStart(4, '0')}-${slug(subject)}.patch`);
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, Buffer.concat([Buffer.from(head, 'utf8'), patch, Buffer.from('-- \nlayerfs\n\n')]));
    renameSync(tmp, file);
    files.push(file);
  });
  return { outDir: dir, files, commits: series.map((s) => toHex(s.c.id)), empty };
}
