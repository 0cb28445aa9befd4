import { native } from '../../lib/native/binding.js';
import { createHash } from 'node:crypto';
const small = Buffer.alloc(64, 1);
function t(name: string, f: () => unknown) { for (let w = 0; w < 3; w++) { const N = 200000; const s = performance.now(); for (let i = 0; i < N; i++) f(); const ns = (performance.now() - s) * 1e6 / N; if (w == 2) console.log(name, ns.toFixed(0), 'ns'); } }
t('native.blake3', () => native.blake3(small));
t('native.objectId', () => native.objectId('layerfs/blob/v1', small));
t('native.chunkLengths', () => native.chunkLengths(small, undefined));
t('Buffer.alloc(32)', () => Buffer.alloc(32));
t('sha256', () => createHash('sha256').update(small).digest());
t('new Hasher', () => new native.Blake3Hasher());
