// Differences from a plain directory that a FUSE Workspace keeps on purpose or cannot avoid, each
// with its reason (docs/FUSE.md, "POSIX conformance"). An id is `syscall:NNN:description`; an
// entry matches on syscall and description (numbers shift as assertions are added).
// The kernel backend has none, whether root's daemon mounted it (mount(2)) or an ordinary
// user's (fusermount3's descriptor): every entry is fuse-native's, a backend a mount now gets
// only when it asks for it.
export interface KnownDifference {
  backend: 'kernel' | 'fuse-native' | 'both';
  /** 0 (root) or a non-root uid; omitted: both. */
  uid?: 'root' | 'other';
  syscall: string;
  description: string;
  reason: string;
}

export const KNOWN: KnownDifference[] = [
  { backend: 'fuse-native', syscall: 'utimensat', description: '... atime ns', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... mtime ns', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... atime unchanged', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms); the value kept is the millisecond one' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... mtime set', reason: "libfuse 2's high-level API drops a SETATTR that changes only one of the two times (UTIME_OMIT, touch -m)" },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... atime set', reason: "libfuse 2's high-level API drops a SETATTR that changes only one of the two times (UTIME_OMIT, touch -m)" },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... mtime unchanged', reason: "libfuse 2's high-level API drops a SETATTR that changes only one of the two times (UTIME_OMIT, touch -m); the earlier change was lost" },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... atime past 2038', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... mtime past 2038', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... mtime before 1970', reason: 'fuse-native converts times as unsigned milliseconds: a time before 1970 comes back as a huge positive one' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... atime before 1970', reason: 'fuse-native converts times as unsigned milliseconds: a time before 1970 comes back as a huge positive one' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... the target changed', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... the symlink mtime', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: '... the target kept its mtime', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: 'a directory', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'utimensat', description: 'os.utime with ns', reason: 'fuse-native carries times in milliseconds (its binding converts each timespec to ms)' },
  { backend: 'fuse-native', syscall: 'rmdir', description: '... listing it gives nothing', reason: "libfuse 2 lists a directory by path: once removed, an open directory's path no longer resolves (ENOENT)" },
];

/** The reason a failure on the mount is expected, or undefined. */
export function knownDifference(backend: string, uid: number, id: string): string | undefined {
  const [syscall, , ...rest] = id.split(':');
  const description = rest.join(':');
  const who = uid === 0 ? 'root' : 'other';
  return KNOWN.find((k) => (k.backend === 'both' || k.backend === backend) && (k.uid === undefined || k.uid === who) && k.syscall === syscall && k.description === description)?.reason;
}
