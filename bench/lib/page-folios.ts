// The page cache's folio sizes, for reading a warm-read figure: a file read from the page cache
// costs less per byte when its pages sit in large folios (ext4 on 6.x kernels, up to 2 MiB) than
// in 4 KiB ones (FUSE on kernels that do not give it large folios, 6.18 among them). Two
// measures, both as root:
//   foliosOf(file)     the share of a file's cached pages that sit in large folios: the file is
//                      mapped and each page touched in a python3 child, its frames found in
//                      /proc/self/pagemap and their flags (compound head or tail) in /proc/kpageflags
//   order0Copy(...)    a copy of a file on an ext4 loop mount with data=journal, where ext4 keeps
//                      every page in a 4 KiB folio: a plain file read through the same filemap
//                      path as the other, in the folios a FUSE file gets (the warm read's bound)

import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

const FOLIOS_PY = String.raw`
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
page = os.sysconf('SC_PAGE_SIZE')
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
if addr in (None, ctypes.c_void_p(-1).value):
    raise OSError(ctypes.get_errno(), 'mmap')
n = (size + page - 1) // page
for i in range(n):
    ctypes.string_at(addr + i * page, 1)
with open('/proc/self/pagemap', 'rb') as pm:
    pm.seek(addr // page * 8)
    entries = pm.read(n * 8)
present = large = 0
kf = os.open('/proc/kpageflags', os.O_RDONLY)
for i in range(n):
    e = int.from_bytes(entries[i * 8:i * 8 + 8], 'little')
    pfn = e & ((1 << 55) - 1)
    if not (e >> 63) or pfn == 0:
        continue
    present += 1
    flags = int.from_bytes(os.pread(kf, 8, pfn * 8), 'little')
    if flags & ((1 << 15) | (1 << 16)):
        large += 1
print(json.dumps({'pages': n, 'present': present, 'large': large}))
`;

/** Share (0–1) of `file`'s resident pages that sit in large folios; undefined where it cannot be seen (not root, no /proc/kpageflags). */
export function foliosOf(file: string): number | undefined {
  const r = spawnSync('python3', ['-c', FOLIOS_PY, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) return undefined;
  const { present, large } = JSON.parse(r.stdout.trim()) as { present: number; large: number };
  return present > 0 ? large / present : undefined;
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.error?.message || '').trim().slice(-500)}`);
}

/** A copy of `file` on an ext4 loop mount with data=journal (4 KiB folios) under `tmp`; release() unmounts and removes it. */
export function order0Copy(tmp: string, file: string): { file: string; release(): void } {
  const img = path.join(tmp, 'order0.img');
  const at = path.join(tmp, 'order0');
  const bytes = fs.statSync(file).size;
  // Room for the file, the journal and ext4's own blocks.
  fs.writeFileSync(img, '');
  fs.truncateSync(img, Math.ceil(bytes * 1.1) + 160 * 1024 * 1024);
  fs.mkdirSync(at, { recursive: true });
  let mounted = false;
  const release = () => {
    if (mounted) spawnSync('umount', [at], { stdio: 'ignore' });
    mounted = false;
    fs.rmSync(img, { force: true });
    fs.rmSync(at, { recursive: true, force: true });
  };
  try {
    run('mkfs.ext4', ['-q', '-F', img]);
    run('mount', ['-o', 'loop,data=journal', img, at]);
    mounted = true;
    const copy = path.join(at, path.basename(file));
    fs.copyFileSync(file, copy);
    run('sync', ['-f', copy]);
    return { file: copy, release };
  } catch (e) {
    release();
    throw e;
  }
}
