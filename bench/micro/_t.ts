import { hashBuffers } from '../../lib/native/index.js';
import { randomFillSync } from 'node:crypto';
const big = randomFillSync(Buffer.allocUnsafe(256 << 20));
const batch = Array.from({ length: 64 }, (_, i) => big.subarray(i * (4 << 20), (i + 1) * (4 << 20)));
for (const t of [1, 2, 1, 2, 4]) {
  const s = performance.now(); const u0 = process.cpuUsage();
  await hashBuffers(batch, { threads: t });
  const ms = performance.now() - s; const u = process.cpuUsage(u0);
  console.log(t, ms.toFixed(0), 'ms', ((256 << 20) / ms / 1e6).toFixed(2), 'GB/s cpu', ((u.user + u.system) / 1000 / ms).toFixed(2));
}
