/**
 * A tree walk that records everything a state must preserve: kinds, bytes, modes, owners,
 * mtimes (ns), symlink targets, hard-link groups and user xattrs. Two walks compare equal when
 * the trees are equal.
 */
import { lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { getXattrs } from '../../lib/native/index.js';

export interface WalkRecord {
  path: string;
  kind: string;
  mode: number;
  uid: number;
  gid: number;
  mtimeNs: string;
  size: number;
  content?: string;
  target?: string;
  linkGroup?: string;
  xattrs: string[];
}

export function walkForCompare(root: string, opts: { dirMtimes?: boolean } = {}): WalkRecord[] {
  const out: WalkRecord[] = [];
  const inodes = new Map<string, string>();
  const visit = (rel: Buffer) => {
    const abs = Buffer.concat([Buffer.from(root), rel.length ? Buffer.from('/') : Buffer.alloc(0), rel]);
    const st = lstatSync(abs, { bigint: true });
    const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : st.isFIFO() ? 'fifo' : st.isCharacterDevice() ? 'chardev' : st.isBlockDevice() ? 'blockdev' : 'other';
    const r: WalkRecord = {
      path: rel.toString('hex'),
      kind,
      mode: Number(st.mode & 0o7777n),
      uid: Number(st.uid),
      gid: Number(st.gid),
      mtimeNs: kind === 'dir' && !opts.dirMtimes ? '' : st.mtimeNs.toString(),
      size: kind === 'dir' ? 0 : Number(st.size),
      xattrs: kind === 'symlink' ? [] : getXattrs(abs).map((x) => `${x.name}=${x.value.toString('hex')}`).sort(),
    };
    if (kind === 'symlink') r.target = readlinkSync(abs, { encoding: 'buffer' }).toString('hex');
    if (kind === 'file') {
      r.content = createHash('sha256').update(readFileSync(abs)).digest('hex');
      if (st.nlink > 1n) {
        const key = `${st.dev}:${st.ino}`;
        if (!inodes.has(key)) inodes.set(key, r.path);
        r.linkGroup = inodes.get(key)!;
      }
    }
    if (kind === 'symlink') r.mode = 0;
    out.push(r);
    if (kind === 'dir') {
      const names = readdirSync(abs, { encoding: 'buffer' }).sort(Buffer.compare);
      for (const n of names) visit(rel.length ? Buffer.concat([rel, Buffer.from('/'), n]) : n);
    }
  };
  visit(Buffer.alloc(0));
  return out;
}
