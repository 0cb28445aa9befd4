/**
 * Extracts a tar stream (ustar, pax, GNU long names) into a new directory as `tar -xp
 * --xattrs --xattrs-include='*' --numeric-owner` run by the same user would: contents, modes,
 * owners (when permitted), nanosecond mtimes, xattrs, symlinks, hard links, FIFOs and devices;
 * directories get their metadata after their contents. Names are checked one component at a
 * time ('..' and absolute names are refused) and every parent must be a directory this
 * extraction made, so no entry — not even through a symlink the archive itself contains —
 * lands outside the target.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, lchownSync, linkSync, lstatSync, mkdirSync, openSync, symlinkSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { LayerFsError } from '../../errors.js';
import { setTimes, setXattr } from '../../native/xattr.js';

const BLOCK = 512;
const PIECE = 1024 * 1024;

/** A tar stream: a Node stream, or any (async) iterable of pieces. */
export type TarSource = AsyncIterable<Buffer | string> | Iterable<Buffer | string>;

/** Reads exact byte counts from an async stream of Buffers. */
class Reader {
  private buf = Buffer.alloc(0);
  private readonly it: AsyncIterator<Buffer | string>;
  constructor(src: TarSource) {
    this.it = (async function* () {
      for await (const piece of src) yield piece;
    })();
  }
  /** Up to n bytes (fewer only at the end of the stream). */
  async read(n: number): Promise<Buffer> {
    while (this.buf.length < n) {
      const r = await this.it.next();
      if (r.done) break;
      this.buf = this.buf.length ? Buffer.concat([this.buf, Buffer.from(r.value)]) : Buffer.from(r.value);
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(out.length);
    return out;
  }
  async exact(n: number, what: string): Promise<Buffer> {
    const b = await this.read(n);
    if (b.length !== n) throw bad(`the archive ends inside ${what}`);
    return b;
  }
}

function bad(message: string): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', `not a valid tar archive: ${message}`, { hint: 'give a tar file (ustar, pax or GNU), uncompressed' });
}

function num(b: Buffer, what: string): number {
  if (b[0]! & 0x80) {
    // GNU base-256: big-endian two's complement, first byte's top bit as the marker.
    let v = BigInt(b[0]! & 0x7f);
    for (const x of b.subarray(1)) v = (v << 8n) | BigInt(x);
    return Number(v);
  }
  const s = b.toString('latin1').replace(/[\0 ]+$/, '').replace(/^[\0 ]+/, '');
  if (s === '') return 0;
  if (!/^[0-7]+$/.test(s)) throw bad(`field ${what} is ${JSON.stringify(s)}`);
  return parseInt(s, 8);
}

const cstr = (b: Buffer): Buffer => {
  const z = b.indexOf(0);
  return z < 0 ? b : b.subarray(0, z);
};

interface Header {
  name: Buffer;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeNs: bigint;
  type: string;
  link: Buffer;
  devmajor: number;
  devminor: number;
  xattrs: [string, Buffer][];
}

function parseHeader(b: Buffer): Header {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : b[i]!;
  if (num(b.subarray(148, 156), 'chksum') !== sum) throw bad('a header checksum does not match');
  const ustar = b.subarray(257, 262).toString('latin1') === 'ustar';
  const prefix = ustar ? cstr(b.subarray(345, 500)) : Buffer.alloc(0);
  const name = cstr(b.subarray(0, 100));
  return {
    name: prefix.length ? Buffer.concat([prefix, Buffer.from('/'), name]) : name,
    mode: num(b.subarray(100, 108), 'mode'),
    uid: num(b.subarray(108, 116), 'uid'),
    gid: num(b.subarray(116, 124), 'gid'),
    size: num(b.subarray(124, 136), 'size'),
    mtimeNs: BigInt(num(b.subarray(136, 148), 'mtime')) * 1_000_000_000n,
    type: b[156] === 0 ? '0' : String.fromCharCode(b[156]!),
    link: cstr(b.subarray(157, 257)),
    devmajor: ustar ? num(b.subarray(329, 337), 'devmajor') : 0,
    devminor: ustar ? num(b.subarray(337, 345), 'devminor') : 0,
    xattrs: [],
  };
}

function parsePax(body: Buffer): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  let off = 0;
  while (off < body.length) {
    const sp = body.indexOf(0x20, off);
    const len = sp < 0 ? NaN : Number(body.subarray(off, sp).toString('latin1'));
    if (!Number.isInteger(len) || len <= 0 || off + len > body.length) throw bad('a pax record is malformed');
    const rec = body.subarray(sp + 1, off + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq < 0) throw bad('a pax record has no "="');
    m.set(rec.subarray(0, eq).toString('utf8'), Buffer.from(rec.subarray(eq + 1)));
    off += len;
  }
  return m;
}

function paxTime(v: Buffer): bigint {
  const m = /^(-?)(\d+)(?:\.(\d{0,9})\d*)?$/.exec(v.toString('latin1'));
  if (!m) throw bad(`pax mtime ${JSON.stringify(v.toString())}`);
  const ns = BigInt(m[2]!) * 1_000_000_000n + BigInt((m[3] ?? '').padEnd(9, '0'));
  return m[1] ? -ns : ns;
}

/** Applies an extended header (pax or GNU long name) to the entry it precedes. */
function override(h: Header, pax: Map<string, Buffer>): void {
  for (const [k, v] of pax) {
    if (k === 'path') h.name = v;
    else if (k === 'linkpath') h.link = v;
    else if (k === 'mtime') h.mtimeNs = paxTime(v);
    else if (k === 'size') h.size = Number(v.toString());
    else if (k === 'uid') h.uid = Number(v.toString());
    else if (k === 'gid') h.gid = Number(v.toString());
    else if (k.startsWith('SCHILY.xattr.')) h.xattrs.push([k.slice('SCHILY.xattr.'.length), v]);
  }
}

/** The archive name as checked components ('' for the root). */
function components(name: Buffer): Buffer[] {
  if (name[0] === 0x2f) throw new LayerFsError('ERR_UNSAFE_PATH', `refusing absolute name ${JSON.stringify(name.toString())} in the archive`, { path: name.toString() });
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= name.length; i++) {
    if (i < name.length && name[i] !== 0x2f) continue;
    const p = name.subarray(start, i);
    start = i + 1;
    if (p.length === 0 || (p.length === 1 && p[0] === 0x2e)) continue;
    if (p.length === 2 && p[0] === 0x2e && p[1] === 0x2e) throw new LayerFsError('ERR_UNSAFE_PATH', `refusing name with '..': ${JSON.stringify(name.toString())}`, { path: name.toString() });
    out.push(p);
  }
  return out;
}

interface Pending {
  abs: Buffer;
  h: Header;
}

export interface TarExtractStats {
  entries: number;
}

/** Extracts the archive into `target` (an existing, empty directory). */
export async function extractTar(src: TarSource, target: string): Promise<TarExtractStats> {
  const r = new Reader(src);
  const root = Buffer.from(target);
  const dirs = new Set<string>(['']);
  const dirMeta: Pending[] = [];
  let next = new Map<string, Buffer>();
  let entries = 0;
  const placeOf = (h: Header): { rel: string; abs: Buffer } => {
    const parts = components(h.name);
    let rel = '';
    let abs = root;
    for (let i = 0; i < parts.length; i++) {
      if (i > 0 && !dirs.has(rel)) {
        const st = lstatOrNull(abs);
        if (st) throw new LayerFsError('ERR_UNSAFE_PATH', `${h.name.toString()}: ${rel} is not a directory of this archive`, { path: h.name.toString(), hint: 'the archive places an entry under a symlink or file' });
        mkdirSync(abs, { mode: 0o755 });
        dirs.add(rel);
      }
      rel = rel ? `${rel}/${parts[i]!.toString('latin1')}` : parts[i]!.toString('latin1');
      abs = Buffer.concat([abs, Buffer.from('/'), parts[i]!]);
    }
    if (parts.length > 0 && !dirs.has(rel) && h.type !== '5' && lstatOrNull(abs)) unlinkSync(abs);
    return { rel, abs };
  };
  for (;;) {
    const block = await r.read(BLOCK);
    if (block.length === 0) break;
    if (block.length < BLOCK) throw bad('the archive ends inside a header');
    if (block.every((x) => x === 0)) break;
    const h = parseHeader(block);
    if (await readExtended(r, h, next)) continue;
    override(h, next);
    next = new Map();
    entries++;
    const { rel, abs } = placeOf(h);
    const dataSize = h.type === '0' || h.type === '7' ? h.size : 0;
    switch (h.type) {
      case '0':
      case '7':
        await writeContent(r, abs, h.size);
        break;
      case '1':
        linkEntry(root, dirs, h, abs);
        continue;
      case '2':
        symlinkSync(h.link, abs);
        break;
      case '5':
        if (rel !== '' && !dirs.has(rel)) mkdirSync(abs, { mode: 0o700 });
        dirs.add(rel);
        dirMeta.push({ abs, h });
        continue;
      case '3':
      case '4':
      case '6':
        makeSpecial(abs, h);
        break;
      default:
        throw bad(`entry ${h.name.toString()} has type ${JSON.stringify(h.type)}, which is not supported`);
    }
    await r.exact((BLOCK - (dataSize % BLOCK)) % BLOCK, 'padding');
    applyMeta(abs, h);
  }
  for (let i = dirMeta.length - 1; i >= 0; i--) applyMeta(dirMeta[i]!.abs, dirMeta[i]!.h);
  return { entries };
}

/**
 * Reads an extended header (pax 'x' and 'g', GNU long name 'L' and long link 'K') into `next`,
 * the overrides of the following entry; false when `h` is an ordinary entry.
 */
async function readExtended(r: Reader, h: Header, next: Map<string, Buffer>): Promise<boolean> {
  if (h.type !== 'x' && h.type !== 'L' && h.type !== 'K' && h.type !== 'g') return false;
  const body = await r.exact(h.size, 'an extended header');
  await r.exact((BLOCK - (h.size % BLOCK)) % BLOCK, 'padding');
  if (h.type === 'x') for (const [k, v] of parsePax(body)) next.set(k, v);
  else if (h.type === 'L') next.set('path', cstr(body));
  else if (h.type === 'K') next.set('linkpath', cstr(body));
  return true;
}

/** A hard link: its target must be a regular file this extraction wrote, under its own directories. */
function linkEntry(root: Buffer, dirs: Set<string>, h: Header, abs: Buffer): void {
  const parts = components(h.link);
  const rel = parts.map((p) => p.toString('latin1'));
  const target = Buffer.concat([root, ...parts.flatMap((p) => [Buffer.from('/'), p])]);
  const st = parts.length ? lstatOrNull(target) : null;
  if (!st || !st.isFile() || rel.slice(0, -1).some((_, i) => !dirs.has(rel.slice(0, i + 1).join('/')))) {
    throw new LayerFsError('ERR_UNSAFE_PATH', `hard link ${h.name.toString()} -> ${rel.join('/')}: not a file extracted before`, { path: h.name.toString() });
  }
  linkSync(target, abs);
}

function lstatOrNull(p: Buffer) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

async function writeContent(r: Reader, abs: Buffer, size: number): Promise<void> {
  const fd = openSync(abs, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  try {
    for (let left = size; left > 0; ) {
      const piece = await r.exact(Math.min(PIECE, left), 'file data');
      let off = 0;
      while (off < piece.length) off += writeSync(fd, piece, off, piece.length - off);
      left -= piece.length;
    }
  } finally {
    closeSync(fd);
  }
}

function makeSpecial(abs: Buffer, h: Header): void {
  const p = abs.toString();
  const args = h.type === '6' ? ['mkfifo', p] : ['mknod', p, h.type === '3' ? 'c' : 'b', String(h.devmajor), String(h.devminor)];
  const res = spawnSync(args[0]!, args.slice(1), { stdio: 'ignore' });
  if (res.status !== 0) throw new LayerFsError('ERR_NATIVE_IO', `cannot create special file ${p}`, { path: p });
}

function applyMeta(abs: Buffer, h: Header): void {
  try {
    lchownSync(abs, h.uid, h.gid);
  } catch (e) {
    // Only root may give files away; others keep their own, as tar does.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') throw e;
  }
  if (h.type !== '2') chmodSync(abs, h.mode & 0o7777);
  for (const [name, value] of h.xattrs) setXattr(abs, name, value);
  setTimes(abs, h.mtimeNs, h.mtimeNs);
}
