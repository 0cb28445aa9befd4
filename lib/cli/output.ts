/**
 * Output: with --json exactly one JSON object on stdout (ids hex, bigints as decimal strings);
 * otherwise short human lines. Errors go to stderr (and as {"error": …} on stdout with --json).
 */
import { isLayerFsError } from '../sdk/index.js';

export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : Buffer.isBuffer(v) ? v.toString('base64') : v), 2);
}

export class Out {
  constructor(readonly json: boolean) {}

  /** Prints the result: `human` renders it for people. */
  result(value: unknown, human: () => string | string[]): void {
    if (this.json) {
      process.stdout.write(toJson(value) + '\n');
      return;
    }
    const text = human();
    const lines = Array.isArray(text) ? text : [text];
    if (lines.length > 0) process.stdout.write(lines.join('\n') + '\n');
  }

  error(e: unknown): number {
    if (isLayerFsError(e)) {
      if (this.json) process.stdout.write(toJson({ error: e.toJSON() }) + '\n');
      process.stderr.write(`layerfs: ${e.message} [${e.code}]\n`);
      return 1;
    }
    if (this.json) process.stdout.write(toJson({ error: { code: 'ERR_INTERNAL', message: String((e as Error)?.message ?? e) } }) + '\n');
    process.stderr.write(`layerfs: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
    return 70;
  }
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function modeString(kind: string, mode: number): string {
  const k = { file: '-', dir: 'd', symlink: 'l', fifo: 'p', chardev: 'c', blockdev: 'b' }[kind] ?? '?';
  const rwx = (bits: number, special: boolean, ch: string) =>
    `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${special ? (bits & 1 ? ch : ch.toUpperCase()) : bits & 1 ? 'x' : '-'}`;
  return k + rwx(mode >> 6, (mode & 0o4000) !== 0, 's') + rwx(mode >> 3, (mode & 0o2000) !== 0, 's') + rwx(mode, (mode & 0o1000) !== 0, 't');
}
