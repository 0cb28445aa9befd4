// The states the readers test writes: state n has every file carrying n.
import { existsSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { seededBytes } from '../helpers/tmp.js';

/** The files of state n (relative path → bytes); `gone` exists in even states only. */
export function files(n: number): Map<string, Buffer> {
  const text = (name: string) => Buffer.from(`seq ${n} ${name}\n` + `${name}:${n};`.repeat(20 + (n % 5) * 40));
  const m = new Map<string, Buffer>([
    ['static.txt', Buffer.from('never changes\n')],
    ['seq', Buffer.from(String(n))],
    ['a.txt', text('a')],
    ['dir/b.txt', text('b')],
    ['dir/sub/c.txt', text('c')],
    ['big.bin', Buffer.concat([Buffer.from(`seq ${n}\n`), seededBytes(1000 + n, 120_000 + (n % 3) * 50_000)])],
  ]);
  if (n % 2 === 0) m.set('gone', Buffer.from(`even ${n}\n`));
  return m;
}

export function writeState(root: string, n: number): void {
  mkdirSync(join(root, 'dir/sub'), { recursive: true });
  // static.txt is written once: rewriting it would change its mtime, which a diff reports.
  for (const [p, b] of files(n)) if (p !== 'static.txt' || !existsSync(join(root, p))) writeFileSync(join(root, p), b);
  if (n % 2 === 1 && existsSync(join(root, 'gone'))) unlinkSync(join(root, 'gone'));
}

