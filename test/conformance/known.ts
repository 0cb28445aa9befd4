// Differences from a plain directory that a FUSE Workspace keeps on purpose or cannot avoid, each
// with its reason (docs/FUSE.md, "POSIX conformance"). An id is `syscall:NNN:description`; an
// entry matches on syscall and description (numbers shift as assertions are added).
// There are none today, whether root's daemon mounted it (mount(2)) or an ordinary user's
// (fusermount3's descriptor), with the writeback cache or without.
export interface KnownDifference {
  backend: 'kernel';
  /** 0 (root) or a non-root uid; omitted: both. */
  uid?: 'root' | 'other';
  syscall: string;
  description: string;
  reason: string;
}

export const KNOWN: KnownDifference[] = [];

/** The reason a failure on the mount is expected, or undefined. */
export function knownDifference(backend: string, uid: number, id: string): string | undefined {
  const [syscall, , ...rest] = id.split(':');
  const description = rest.join(':');
  const who = uid === 0 ? 'root' : 'other';
  return KNOWN.find((k) => k.backend === backend && (k.uid === undefined || k.uid === who) && k.syscall === syscall && k.description === description)?.reason;
}
