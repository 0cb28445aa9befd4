import { chunkLengths, chunkAndHash } from '../../lib/native/index.js';
import { randomFillSync } from 'node:crypto';
const big = randomFillSync(Buffer.allocUnsafe(256 << 20));
for (let i = 0; i < 5; i++) { const s = performance.now(); chunkLengths(big); const ms = performance.now() - s; const s2 = performance.now(); chunkAndHash(big); const ms2 = performance.now() - s2; console.log('chunk', ((256 << 20) / ms / 1e6).toFixed(2), 'c+h', ((256 << 20) / ms2 / 1e6).toFixed(2)); }
