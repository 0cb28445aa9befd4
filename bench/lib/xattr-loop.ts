// A child process of the fuse_mount cell: `count` listxattr(2) calls on one path, then prints the
// mean microseconds per call. Through a mount each is one kernel round trip to the daemon that
// touches no Store data, so it measures the fixed cost every request pays.
//   node --import tsx bench/lib/xattr-loop.ts PATH COUNT
import { listXattrs } from '../../lib/native/index.js';

const [file, n] = [process.argv[2]!, Number(process.argv[3] ?? 20000)];
for (let i = 0; i < 1000; i++) listXattrs(file);
const t0 = performance.now();
for (let i = 0; i < n; i++) listXattrs(file);
process.stdout.write(`${(((performance.now() - t0) * 1000) / n).toFixed(3)}\n`);
