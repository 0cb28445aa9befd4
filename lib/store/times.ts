// Placeholder until the addon exposes utimensat; replaced below.
import { lutimesSync } from 'node:fs';
export function setTimes(path: Buffer, atimeNs: bigint, mtimeNs: bigint): void {
  lutimesSync(path, Number(atimeNs) / 1e9, Number(mtimeNs) / 1e9);
}
