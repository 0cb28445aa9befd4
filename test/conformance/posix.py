#!/usr/bin/env python3
"""POSIX conformance assertions over one directory, as one user.

Usage: posix.py WORKDIR [UID GID GROUPS]   (GROUPS: comma-separated supplementary gids)

Started as root: it lays the fixtures that need root (files of a foreign owner, a sticky
directory), then drops to UID/GID/GROUPS when given, then runs every assertion. Prints one JSON
object: {"uid": …, "results": [[id, passed, got, want], …]}. An assertion's `want` is what the
POSIX specification (Issue 8, System Interfaces; Linux's documented choice where POSIX allows
several) says; the caller compares the same ids run against a plain directory and a mount.
Outcomes are normalised (errno names, booleans, mode bits), never inode numbers or raw times.
"""
import ctypes
import errno
import json
import os
import socket
import stat
import sys
import time

WORK = sys.argv[1]
AS_UID = int(sys.argv[2]) if len(sys.argv) > 2 else 0
AS_GID = int(sys.argv[3]) if len(sys.argv) > 3 else 0
GROUPS = [int(g) for g in sys.argv[4].split(',')] if len(sys.argv) > 4 and sys.argv[4] else []
FOREIGN = 4444  # an owner the test user is not, and a group it is not in
ROOT = AS_UID == 0
OTHER_GROUP = GROUPS[-1] if GROUPS else 0

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


class Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


results = []
current = ['']


def section(name):
    """Enters the section's directory (made and handed over by main()) and lays the common fixtures."""
    current[0] = name
    os.chdir(os.path.join(WORK, name))
    fixtures()


class OneOf:
    """Several outcomes the specification allows."""

    def __init__(self, *values):
        self.values = values

    def __repr__(self):
        return 'one of ' + ', '.join(repr(v) for v in self.values)


def check(desc, got, want):
    """One assertion: `want` is a value or OneOf(allowed values)."""
    ok = got in want.values if isinstance(want, OneOf) else got == want
    results.append([f'{current[0]}:{len([r for r in results if r[0].startswith(current[0] + ":")]) + 1:03d}:{desc}', ok, repr(got), repr(want)])


def E(fn, *a, **k):
    """'OK' or the errno name an os call fails with."""
    try:
        fn(*a, **k)
        return 'OK'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    except ValueError:
        return 'ValueError'


def V(fn, *a, **k):
    """The value of an os call, or the errno name it fails with."""
    try:
        return fn(*a, **k)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def kind(p):
    try:
        m = os.lstat(p).st_mode
    except OSError as e:
        return errno.errorcode[e.errno]
    for name, test in (('file', stat.S_ISREG), ('dir', stat.S_ISDIR), ('symlink', stat.S_ISLNK), ('fifo', stat.S_ISFIFO), ('socket', stat.S_ISSOCK), ('chr', stat.S_ISCHR), ('blk', stat.S_ISBLK)):
        if test(m):
            return name
    return 'other'


def perm(p, follow=False):
    return stat.S_IMODE((os.stat if follow else os.lstat)(p).st_mode)


def nlink(p):
    return os.lstat(p).st_nlink


def write(p, data=b'hello', mode=0o644):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.write(fd, data)
    os.close(fd)


def read(p):
    with open(p, 'rb') as f:
        return f.read()


def make_socket(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(p)
    finally:
        s.close()


def utimensat(path, atime, mtime, flags=0):
    """utimensat(2) with (sec, nsec) pairs or UTIME_NOW / UTIME_OMIT as nsec; None: times NULL."""
    if atime is None:
        ts = None
    else:
        ts = (Timespec * 2)(Timespec(*atime), Timespec(*mtime))
    r = libc.utimensat(AT_FDCWD, os.fsencode(path), ts, flags)
    return 'OK' if r == 0 else errno.errorcode.get(ctypes.get_errno(), '?')


def tick():
    """Lets the clock move past the last change (ctime/mtime comparisons)."""
    time.sleep(0.012)


def mtime_moved(path, before):
    """True when path's mtime moved past before's; else what was seen then and 300 ms later, so a
    failure's report tells a time never marked from one shown late (a late kernel invalidation)."""
    now = os.lstat(path).st_mtime_ns
    if now > before.st_mtime_ns:
        return True
    time.sleep(0.3)
    later = os.lstat(path).st_mtime_ns
    return f'mtime {now - before.st_mtime_ns} ns past the earlier one, {later - before.st_mtime_ns} ns 300 ms later'


def fixtures():
    """Per section: f (0644 'hello'), d/ with d/sub, e/ (empty), symlinks, a loop, a long name."""
    write('f')
    os.mkdir('d', 0o755)
    write('d/sub')
    os.mkdir('e', 0o755)
    os.symlink('f', 'lf')
    os.symlink('d', 'ld')
    os.symlink('loop', 'loop')
    os.symlink('nowhere', 'dangling')
    os.mkdir('ro', 0o555)
    write('pe_f')
    os.symlink('pe_loop', 'pe_loop')
    os.symlink('pe_none', 'pe_dangling')
    os.mkdir('shut', 0o755)
    write('shut/x')
    os.chmod('shut', 0o000)


def path_errors(call, creating=False):
    """The errors every path argument shares (pathname resolution, XBD 4.13)."""
    check('missing component ENOENT', E(call, 'pe_none/x'), 'ENOENT')
    check('empty path ENOENT', E(call, ''), 'ENOENT')
    check('file as directory ENOTDIR', E(call, 'pe_f/x'), 'ENOTDIR')
    check('name over NAME_MAX ENAMETOOLONG', E(call, 'a' * 256), 'ENAMETOOLONG')
    check('inner name over NAME_MAX ENAMETOOLONG', E(call, 'b' * 256 + '/x'), 'ENAMETOOLONG')
    check('path over PATH_MAX ENAMETOOLONG', E(call, 'd/' * 2100 + 'x'), 'ENAMETOOLONG')
    check('symlink loop ELOOP', E(call, 'pe_loop/x'), 'ELOOP')
    check('dangling symlink component ENOENT', E(call, 'pe_dangling/x'), 'ENOENT')
    check('missing directory then .. ENOENT', E(call, 'pe_none/../f2'), 'ENOENT')
    if not ROOT:
        check('no search permission EACCES', E(call, 'shut/x' if not creating else 'shut/new'), 'EACCES')


def foreign(p, mode=0o644, kind_='file'):
    """A fixture owned by FOREIGN (laid as root before the drop of privileges)."""
    if kind_ == 'file':
        write(p, mode=mode)
    else:
        os.mkdir(p, mode)
    os.chown(p, FOREIGN, FOREIGN)
    os.chmod(p, mode)


# ---------------------------------------------------------------------------------------------


def t_chmod():
    section('chmod')
    for m in (0o000, 0o400, 0o600, 0o644, 0o664, 0o700, 0o755, 0o777, 0o1755, 0o4755):
        check(f'chmod f {m:o} succeeds', E(os.chmod, 'f', m), 'OK')
        check(f'chmod f {m:o} sets the mode', perm('f'), m)
    check('chmod keeps the file type', kind('f'), 'file')
    for m in (0o700, 0o1777, 0o755):
        check(f'chmod d {m:o} succeeds', E(os.chmod, 'd', m), 'OK')
        check(f'chmod d {m:o} sets the mode', perm('d'), m)
    check('high bits of mode are ignored', E(os.chmod, 'f', stat.S_IFDIR | 0o640), 'OK')
    check('... and the file stays a file with 0640', (kind('f'), perm('f')), ('file', 0o640))
    check('chmod follows a symlink', E(os.chmod, 'lf', 0o600), 'OK')
    check('... the target changed', perm('f'), 0o600)
    check('... the symlink did not', perm('lf'), 0o777)
    before = os.lstat('f')
    tick()
    os.chmod('f', 0o644)
    after = os.lstat('f')
    check('chmod marks ctime for update', after.st_ctime_ns > before.st_ctime_ns, True)
    check('chmod leaves mtime', after.st_mtime_ns, before.st_mtime_ns)
    fd = os.open('f', os.O_RDONLY)
    check('fchmod succeeds', E(os.fchmod, fd, 0o640), 'OK')
    check('fchmod sets the mode', stat.S_IMODE(os.fstat(fd).st_mode), 0o640)
    os.close(fd)
    os.mkfifo('p', 0o600)
    check('chmod of a fifo', (E(os.chmod, 'p', 0o640), perm('p')), ('OK', 0o640))
    check('chmod of a dangling symlink ENOENT', E(os.chmod, 'dangling', 0o600), 'ENOENT')
    check('chmod of a loop ELOOP', E(os.chmod, 'loop', 0o600), 'ELOOP')
    check('chmod trailing slash on a file ENOTDIR', E(os.chmod, 'f/', 0o600), 'ENOTDIR')
    check('chmod trailing slash on a directory', E(os.chmod, 'd/', 0o755), 'OK')
    path_errors(lambda p: os.chmod(p, 0o644))
    if ROOT:
        check('root may chmod a foreign file', (E(os.chmod, 'foreign', 0o600), perm('foreign')), ('OK', 0o600))
    else:
        check('chmod of a file of another owner EPERM', E(os.chmod, 'foreign', 0o600), 'EPERM')
        check('... leaves its mode', perm('foreign'), 0o644)
        os.chown('f', AS_UID, OTHER_GROUP)
        check('S_ISGID kept for a group of the caller', (E(os.chmod, 'f', 0o2755), perm('f')), ('OK', 0o2755))
        os.chown('f', AS_UID, AS_GID)
        check('... S_ISGID cleared when chown changes the group', perm('f') & 0o6000, 0)
        check('chmod S_ISGID on a file of a foreign group', E(os.chmod, 'fgroup', 0o2755), 'OK')
        check('... S_ISGID silently cleared', perm('fgroup'), 0o755)


def t_chown():
    section('chown')
    u, g = AS_UID, AS_GID
    check('chown to -1,-1 succeeds', E(os.chown, 'f', -1, -1), 'OK')
    check('... owner unchanged', (os.lstat('f').st_uid, os.lstat('f').st_gid), (u, g))
    check('chown to the owner itself', E(os.chown, 'f', u, -1), 'OK')
    check('chown to the current group', E(os.chown, 'f', -1, g), 'OK')
    check('chown to a supplementary group' if not ROOT else 'chown to group 4343', E(os.chown, 'f', -1, OTHER_GROUP or 4343), 'OK')
    check('... the group changed', os.lstat('f').st_gid, OTHER_GROUP or 4343)
    check('... the owner did not', os.lstat('f').st_uid, u)
    os.chown('f', -1, g)
    before = os.lstat('f')
    tick()
    os.chown('f', -1, OTHER_GROUP or 4343)
    after = os.lstat('f')
    check('chown marks ctime for update', after.st_ctime_ns > before.st_ctime_ns, True)
    check('chown leaves mtime', after.st_mtime_ns, before.st_mtime_ns)
    check('chown leaves the permission bits of a plain file', perm('f'), 0o644)
    os.chmod('f', 0o4755)
    os.chown('f', -1, g)
    check('chown clears S_ISUID of a regular file', perm('f') & 0o4000, 0)
    os.chmod('f', 0o2755)
    os.chown('f', -1, OTHER_GROUP or 4343)
    check('chown clears S_ISGID of a group-executable file', perm('f') & 0o2000, 0)
    os.chmod('d', 0o2755)
    os.chown('d', -1, OTHER_GROUP or 4343)
    check('chown keeps S_ISGID of a directory', perm('d') & 0o2000, 0o2000)
    check('chown follows a symlink', E(os.chown, 'lf', -1, g), 'OK')
    check('... the target changed', os.lstat('f').st_gid, g)
    check('lchown changes the symlink itself', E(os.lchown, 'lf', -1, OTHER_GROUP or 4343), 'OK')
    check('... the symlink group', os.lstat('lf').st_gid, OTHER_GROUP or 4343)
    check('... the target kept its group', os.lstat('f').st_gid, g)
    check('lchown of a dangling symlink', E(os.lchown, 'dangling', -1, g), 'OK')
    check('chown of a dangling symlink ENOENT', E(os.chown, 'dangling', -1, g), 'ENOENT')
    check('chown of a loop ELOOP', E(os.chown, 'loop', -1, g), 'ELOOP')
    fd = os.open('f', os.O_RDONLY)
    check('fchown succeeds', E(os.fchown, fd, -1, OTHER_GROUP or 4343), 'OK')
    check('fchown sets the group', os.fstat(fd).st_gid, OTHER_GROUP or 4343)
    os.close(fd)
    os.mkfifo('p', 0o644)
    check('chown of a fifo', E(os.chown, 'p', -1, OTHER_GROUP or 4343), 'OK')
    check('chown of a directory', E(os.chown, 'e', -1, OTHER_GROUP or 4343), 'OK')
    check('... its group', os.lstat('e').st_gid, OTHER_GROUP or 4343)
    check('chown trailing slash on a file ENOTDIR', E(os.chown, 'f/', -1, g), 'ENOTDIR')
    path_errors(lambda p: os.chown(p, -1, g))
    if ROOT:
        check('root gives a file away', E(os.chown, 'f', FOREIGN, FOREIGN), 'OK')
        check('... owner and group set', (os.lstat('f').st_uid, os.lstat('f').st_gid), (FOREIGN, FOREIGN))
        check('root takes a foreign file back', E(os.chown, 'foreign', 0, 0), 'OK')
        check('... owner and group set', (os.lstat('foreign').st_uid, os.lstat('foreign').st_gid), (0, 0))
    else:
        check('giving a file away EPERM', E(os.chown, 'f', FOREIGN, -1), 'EPERM')
        check('a group the caller is not in EPERM', E(os.chown, 'f', -1, FOREIGN), 'EPERM')
        check('chown of a foreign file EPERM', E(os.chown, 'foreign', -1, g), 'EPERM')
        check('chown of a foreign file to itself EPERM', E(os.chown, 'foreign', AS_UID, -1), 'EPERM')
        check('... unchanged', (os.lstat('foreign').st_uid, os.lstat('foreign').st_gid), (FOREIGN, FOREIGN))


def t_link():
    section('link')
    check('link succeeds', E(os.link, 'f', 'g'), 'OK')
    check('... same file', (os.lstat('f').st_ino == os.lstat('g').st_ino), True)
    check('... link count 2 on the old name', nlink('f'), 2)
    check('... link count 2 on the new name', nlink('g'), 2)
    check('... same content', read('g'), b'hello')
    write('g', b'changed')
    check('a write through one name shows through the other', read('f'), b'changed')
    before = os.lstat('f')
    dbefore = os.lstat('.')
    tick()
    os.link('f', 'h')
    check('link marks the file ctime', os.lstat('f').st_ctime_ns > before.st_ctime_ns, True)
    check('link marks the directory mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('link count 3', nlink('h'), 3)
    check('link into a subdirectory', E(os.link, 'f', 'd/f2'), 'OK')
    check('... link count 4', nlink('f'), 4)
    check('new name exists EEXIST', E(os.link, 'f', 'd/sub'), 'EEXIST')
    check('new name is a directory EEXIST', E(os.link, 'f', 'e'), 'EEXIST')
    check('new name is a dangling symlink EEXIST', E(os.link, 'f', 'dangling'), 'EEXIST')
    check('new name is the same file EEXIST', E(os.link, 'f', 'g'), 'EEXIST')
    check('link to a directory EPERM', E(os.link, 'd', 'd2'), 'EPERM')
    check('link to a symlink links the symlink', E(os.link, 'lf', 'lf2', follow_symlinks=False), 'OK')
    check('... it is a symlink', kind('lf2'), 'symlink')
    check('... the symlink count 2', nlink('lf'), 2)
    check('link to a dangling symlink', E(os.link, 'dangling', 'dang2', follow_symlinks=False), 'OK')
    os.mkfifo('p', 0o644)
    check('link to a fifo', (E(os.link, 'p', 'p2'), kind('p2')), ('OK', 'fifo'))
    make_socket('s')
    check('link to a socket', (E(os.link, 's', 's2'), kind('s2')), ('OK', 'socket'))
    check('new name with trailing slash', E(os.link, 'f', 'new/'), OneOf('ENOENT', 'ENOTDIR'))
    check('old name with trailing slash ENOTDIR', E(os.link, 'f/', 'new'), 'ENOTDIR')
    check('missing old name ENOENT', E(os.link, 'nothing', 'new'), 'ENOENT')
    check('... nothing created', kind('new'), 'ENOENT')
    os.unlink('g')
    check('unlink of one name lowers the count', nlink('f'), 3)
    path_errors(lambda p: os.link(p, 'new1'))
    path_errors(lambda p: os.link('f', p), creating=True)
    if not ROOT:
        check('link in a directory without write permission EACCES', E(os.link, 'f', 'ro/x'), 'EACCES')
        # protected_hardlinks is Linux's own rule; the control shows what this machine does.
        check('link to a foreign file one cannot read', E(os.link, 'foreign600', 'fl'), OneOf('EPERM', 'OK'))
    else:
        check('root links into a read-only directory', E(os.link, 'f', 'ro/x'), 'OK')


def t_mkdir():
    section('mkdir')
    os.umask(0)
    for m in (0o700, 0o755, 0o777, 0o1777, 0o750, 0o500):
        n = f'm{m:o}'
        check(f'mkdir {m:o} succeeds', E(os.mkdir, n, m), 'OK')
        check(f'mkdir {m:o} gives that mode', perm(n), m)
    os.umask(0o022)
    check('mkdir under umask 022', E(os.mkdir, 'um', 0o777), 'OK')
    check('... mode 0755', perm('um'), 0o755)
    os.umask(0)
    check('a new directory is a directory', kind('um'), 'dir')
    check('a new directory has link count 2', nlink('um'), 2)
    check('a new directory is empty', os.listdir('um'), [])
    n0 = nlink('e')
    os.mkdir('e/s1')
    check('a subdirectory raises the parent link count', nlink('e'), n0 + 1)
    os.mkdir('e/s2')
    check('a second one raises it again', nlink('e'), n0 + 2)
    write('e/file')
    check('a file does not', nlink('e'), n0 + 2)
    check('the owner is the caller', os.lstat('um').st_uid, AS_UID)
    check('the group is the caller group', os.lstat('um').st_gid, AS_GID)
    os.mkdir('sg', 0o2775)
    os.chown('sg', -1, OTHER_GROUP or 4343)
    os.chmod('sg', 0o2775)
    os.mkdir('sg/child', 0o755)
    check('in a S_ISGID directory the group is inherited', os.lstat('sg/child').st_gid, OTHER_GROUP or 4343)
    check('... and S_ISGID too', perm('sg/child') & 0o2000, 0o2000)
    dbefore = os.lstat('.')
    tick()
    os.mkdir('t')
    check('mkdir marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('mkdir marks the parent ctime', os.lstat('.').st_ctime_ns > dbefore.st_ctime_ns, True)
    check('existing directory EEXIST', E(os.mkdir, 'd'), 'EEXIST')
    check('existing file EEXIST', E(os.mkdir, 'f'), 'EEXIST')
    check('existing symlink EEXIST', E(os.mkdir, 'lf'), 'EEXIST')
    check('dangling symlink EEXIST', E(os.mkdir, 'dangling'), 'EEXIST')
    check('trailing slash', E(os.mkdir, 'slash/'), 'OK')
    check('... made', kind('slash'), 'dir')
    check('mkdir through a symlinked directory', E(os.mkdir, 'ld/viasym'), 'OK')
    check('... made in the target', kind('d/viasym'), 'dir')
    check('name of exactly NAME_MAX bytes', E(os.mkdir, 'n' * 255), 'OK')
    check('. EEXIST', E(os.mkdir, '.'), 'EEXIST')
    check('.. EEXIST', E(os.mkdir, '..'), 'EEXIST')
    path_errors(os.mkdir, creating=True)
    if not ROOT:
        check('in a directory without write permission EACCES', E(os.mkdir, 'ro/x'), 'EACCES')
        check('in a foreign directory EACCES', E(os.mkdir, 'fdir/x'), 'EACCES')
    else:
        check('root makes a directory in a read-only one', E(os.mkdir, 'ro/x'), 'OK')


def t_mkfifo():
    section('mkfifo')
    os.umask(0)
    for m in (0o600, 0o644, 0o666, 0o640, 0o400, 0o777):
        n = f'p{m:o}'
        check(f'mkfifo {m:o} succeeds', E(os.mkfifo, n, m), 'OK')
        check(f'mkfifo {m:o} gives that mode', perm(n), m)
        check(f'mkfifo {m:o} is a fifo', kind(n), 'fifo')
    os.umask(0o022)
    os.mkfifo('um', 0o666)
    check('mkfifo under umask 022', perm('um'), 0o644)
    os.umask(0)
    check('the owner is the caller', os.lstat('um').st_uid, AS_UID)
    check('the group is the caller group', os.lstat('um').st_gid, AS_GID)
    check('size 0', os.lstat('um').st_size, 0)
    check('link count 1', nlink('um'), 1)
    dbefore = os.lstat('.')
    tick()
    os.mkfifo('t')
    check('mkfifo marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('existing fifo EEXIST', E(os.mkfifo, 't'), 'EEXIST')
    check('existing file EEXIST', E(os.mkfifo, 'f'), 'EEXIST')
    check('existing directory EEXIST', E(os.mkfifo, 'd'), 'EEXIST')
    check('dangling symlink EEXIST', E(os.mkfifo, 'dangling'), 'EEXIST')
    check('trailing slash', E(os.mkfifo, 'ts/'), OneOf('ENOENT', 'EISDIR', 'ENOTDIR'))
    check('non-blocking open for writing without a reader ENXIO', E(os.open, 't', os.O_WRONLY | os.O_NONBLOCK), 'ENXIO')
    fd = os.open('t', os.O_RDONLY | os.O_NONBLOCK)
    check('non-blocking open for reading succeeds', fd >= 0, True)
    w = os.open('t', os.O_WRONLY | os.O_NONBLOCK)
    os.write(w, b'through')
    check('data passes through the fifo', os.read(fd, 100), b'through')
    os.close(w)
    os.close(fd)
    check('a fifo keeps size 0 after use', os.lstat('t').st_size, 0)
    check('mkfifo with S_ISUID etc. keeps the permission bits', (E(os.mkfifo, 'high', 0o7777 & 0o777), perm('high')), ('OK', 0o777))
    path_errors(os.mkfifo, creating=True)
    if not ROOT:
        check('in a directory without write permission EACCES', E(os.mkfifo, 'ro/x'), 'EACCES')
    else:
        check('root makes a fifo in a read-only directory', E(os.mkfifo, 'ro/x'), 'OK')


def t_mknod():
    section('mknod')
    os.umask(0)
    for m in (0o600, 0o644, 0o755):
        check(f'mknod S_IFIFO {m:o}', E(os.mknod, f'p{m:o}', stat.S_IFIFO | m), 'OK')
        check(f'... a fifo {m:o}', (kind(f'p{m:o}'), perm(f'p{m:o}')), ('fifo', m))
        check(f'mknod S_IFREG {m:o}', E(os.mknod, f'r{m:o}', stat.S_IFREG | m), 'OK')
        check(f'... a file {m:o}', (kind(f'r{m:o}'), perm(f'r{m:o}')), ('file', m))
        check(f'... empty {m:o}', os.lstat(f'r{m:o}').st_size, 0)
    check('mknod type 0 makes a regular file', (E(os.mknod, 'zero', 0o644), kind('zero')), ('OK', 'file'))
    check('mknod S_IFSOCK', E(os.mknod, 'sock', stat.S_IFSOCK | 0o644), 'OK')
    check('... a socket', kind('sock'), 'socket')
    check('mknod S_IFDIR EPERM', E(os.mknod, 'dir', stat.S_IFDIR | 0o755), OneOf('EPERM', 'EINVAL'))
    check('mknod of an invalid type EINVAL', E(os.mknod, 'bad', 0o170000 | 0o644), 'EINVAL')
    if ROOT:
        check('root makes a character device', E(os.mknod, 'null', stat.S_IFCHR | 0o666, os.makedev(1, 3)), 'OK')
        check('... a character device', kind('null'), 'chr')
        check('... its device number', os.lstat('null').st_rdev, os.makedev(1, 3))
        check('root makes a block device', E(os.mknod, 'blk', stat.S_IFBLK | 0o600, os.makedev(7, 200)), 'OK')
        check('... a block device', kind('blk'), 'blk')
        check('... its device number', os.lstat('blk').st_rdev, os.makedev(7, 200))
    else:
        check('a character device EPERM', E(os.mknod, 'null', stat.S_IFCHR | 0o666, os.makedev(1, 3)), 'EPERM')
        check('a block device EPERM', E(os.mknod, 'blk', stat.S_IFBLK | 0o600, os.makedev(7, 200)), 'EPERM')
        check('... nothing made', kind('null'), 'ENOENT')
    os.umask(0o022)
    os.mknod('um', stat.S_IFIFO | 0o666)
    check('mknod under umask 022', perm('um'), 0o644)
    os.umask(0)
    check('the owner is the caller', os.lstat('um').st_uid, AS_UID)
    check('the group is the caller group', os.lstat('um').st_gid, AS_GID)
    dbefore = os.lstat('.')
    tick()
    os.mknod('t', stat.S_IFIFO | 0o600)
    check('mknod marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('existing name EEXIST', E(os.mknod, 't', stat.S_IFIFO | 0o600), 'EEXIST')
    check('existing file EEXIST', E(os.mknod, 'f', stat.S_IFREG | 0o600), 'EEXIST')
    check('existing directory EEXIST', E(os.mknod, 'd', stat.S_IFIFO | 0o600), 'EEXIST')
    check('dangling symlink EEXIST', E(os.mknod, 'dangling', stat.S_IFIFO | 0o600), 'EEXIST')
    path_errors(lambda p: os.mknod(p, stat.S_IFIFO | 0o600), creating=True)
    if not ROOT:
        check('in a directory without write permission EACCES', E(os.mknod, 'ro/x', stat.S_IFIFO | 0o600), 'EACCES')


def t_open():
    section('open')
    os.umask(0)
    fd = os.open('new', os.O_WRONLY | os.O_CREAT, 0o640)
    check('O_CREAT makes a file', kind('new'), 'file')
    check('... with the mode', perm('new'), 0o640)
    check('... owned by the caller', (os.lstat('new').st_uid, os.lstat('new').st_gid), (AS_UID, AS_GID))
    check('... empty', os.lstat('new').st_size, 0)
    os.close(fd)
    fd = os.open('ro-new', os.O_RDWR | os.O_CREAT, 0o444)
    check('O_CREAT with a read-only mode still gives a writable descriptor', os.write(fd, b'x'), 1)
    os.close(fd)
    check('O_CREAT|O_EXCL on an existing file EEXIST', E(os.open, 'f', os.O_WRONLY | os.O_CREAT | os.O_EXCL), 'EEXIST')
    check('O_CREAT|O_EXCL on a dangling symlink EEXIST', E(os.open, 'dangling', os.O_WRONLY | os.O_CREAT | os.O_EXCL), 'EEXIST')
    check('O_CREAT|O_EXCL on a directory EEXIST', E(os.open, 'd', os.O_WRONLY | os.O_CREAT | os.O_EXCL), 'EEXIST')
    check('O_CREAT through a dangling symlink creates the target', E(os.open, 'dangling', os.O_WRONLY | os.O_CREAT, 0o644), 'OK')
    check('... the target exists', kind('nowhere'), 'file')
    check('O_CREAT on an existing file keeps it', (E(os.open, 'f', os.O_RDONLY | os.O_CREAT), read('f')), ('OK', b'hello'))
    check('O_CREAT on a directory EISDIR', E(os.open, 'd', os.O_WRONLY | os.O_CREAT), 'EISDIR')
    check('O_CREAT with a trailing slash EISDIR', E(os.open, 'x/', os.O_WRONLY | os.O_CREAT, 0o644), 'EISDIR')
    write('t', b'0123456789')
    fd = os.open('t', os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    check('O_TRUNC empties the file', os.lstat('t').st_size, 0)
    write('t', b'0123456789')
    fd = os.open('t', os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'AB')
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b'CD')
    os.close(fd)
    check('O_APPEND writes at the end whatever the offset', read('t'), b'0123456789ABCD')
    fd = os.open('t', os.O_RDWR)
    os.write(fd, b'xy')
    os.close(fd)
    check('O_RDWR writes from the start', read('t')[:4], b'xy23')
    check('O_WRONLY on a directory EISDIR', E(os.open, 'd', os.O_WRONLY), 'EISDIR')
    check('O_RDWR on a directory EISDIR', E(os.open, 'd', os.O_RDWR), 'EISDIR')
    check('O_RDONLY on a directory succeeds', E(lambda: os.close(os.open('d', os.O_RDONLY))), 'OK')
    check('O_DIRECTORY on a file ENOTDIR', E(os.open, 'f', os.O_RDONLY | os.O_DIRECTORY), 'ENOTDIR')
    check('O_DIRECTORY on a directory', E(lambda: os.close(os.open('d', os.O_RDONLY | os.O_DIRECTORY))), 'OK')
    check('O_DIRECTORY through a symlink to a directory', E(lambda: os.close(os.open('ld', os.O_RDONLY | os.O_DIRECTORY))), 'OK')
    check('O_NOFOLLOW on a symlink ELOOP', E(os.open, 'lf', os.O_RDONLY | os.O_NOFOLLOW), 'ELOOP')
    check('O_NOFOLLOW on a file', E(lambda: os.close(os.open('f', os.O_RDONLY | os.O_NOFOLLOW))), 'OK')
    check('a symlink loop ELOOP', E(os.open, 'loop', os.O_RDONLY), 'ELOOP')
    check('a dangling symlink ENOENT', E(os.open, 'dangling2', os.O_RDONLY), 'ENOENT')
    check('a missing file ENOENT', E(os.open, 'missing', os.O_RDONLY), 'ENOENT')
    check('a trailing slash on a file ENOTDIR', E(os.open, 'f/', os.O_RDONLY), 'ENOTDIR')
    os.mkfifo('p', 0o666)
    check('a fifo without a reader, O_WRONLY|O_NONBLOCK ENXIO', E(os.open, 'p', os.O_WRONLY | os.O_NONBLOCK), 'ENXIO')
    make_socket('s')
    check('a socket ENXIO', E(os.open, 's', os.O_RDONLY), 'ENXIO')
    before = os.lstat('t')
    tick()
    os.close(os.open('t', os.O_WRONLY | os.O_TRUNC))
    after = os.lstat('t')
    check('O_TRUNC marks mtime', after.st_mtime_ns > before.st_mtime_ns, True)
    check('O_TRUNC marks ctime', after.st_ctime_ns > before.st_ctime_ns, True)
    dbefore = os.lstat('.')
    tick()
    os.close(os.open('made', os.O_WRONLY | os.O_CREAT, 0o600))
    check('O_CREAT marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('a name of exactly NAME_MAX bytes', E(lambda: os.close(os.open('n' * 255, os.O_WRONLY | os.O_CREAT, 0o600))), 'OK')
    check('O_CREAT of a name over NAME_MAX ENAMETOOLONG', E(os.open, 'n' * 256, os.O_WRONLY | os.O_CREAT, 0o600), 'ENAMETOOLONG')
    path_errors(lambda p: os.open(p, os.O_RDONLY))
    path_errors(lambda p: os.open(p, os.O_WRONLY | os.O_CREAT, 0o644), creating=True)
    if not ROOT:
        os.chmod('t', 0o444)
        check('O_WRONLY without write permission EACCES', E(os.open, 't', os.O_WRONLY), 'EACCES')
        check('O_RDONLY of a foreign 0600 file EACCES', E(os.open, 'foreign600', os.O_RDONLY), 'EACCES')
        check('O_CREAT in a directory without write permission EACCES', E(os.open, 'ro/x', os.O_WRONLY | os.O_CREAT, 0o644), 'EACCES')
        check('O_RDONLY of a foreign 0644 file', E(lambda: os.close(os.open('foreign', os.O_RDONLY))), 'OK')
    else:
        check('root opens a foreign 0600 file', E(lambda: os.close(os.open('foreign600', os.O_RDWR))), 'OK')
        check('root creates in a read-only directory', E(lambda: os.close(os.open('ro/x', os.O_WRONLY | os.O_CREAT, 0o644))), 'OK')


def t_rename():
    section('rename')
    check('rename a file', E(os.rename, 'f', 'g'), 'OK')
    check('... old name gone', kind('f'), 'ENOENT')
    check('... new name has the content', read('g'), b'hello')
    write('a', b'A')
    write('b', b'B')
    ino = os.lstat('a').st_ino
    check('rename over a file', E(os.rename, 'a', 'b'), 'OK')
    check('... the target replaced', read('b'), b'A')
    check('... the inode kept', os.lstat('b').st_ino == ino, True)
    check('rename a directory', E(os.rename, 'd', 'd2'), 'OK')
    check('... its content moves', read('d2/sub'), b'hello')
    os.mkdir('empty')
    check('rename a directory over an empty directory', E(os.rename, 'd2', 'empty'), 'OK')
    check('... replaced', kind('empty/sub'), 'file')
    os.mkdir('full')
    write('full/x')
    os.mkdir('src')
    check('rename a directory over a non-empty one', E(os.rename, 'src', 'full'), OneOf('ENOTEMPTY', 'EEXIST'))
    check('rename a file over a directory EISDIR', E(os.rename, 'b', 'full'), 'EISDIR')
    check('rename a directory over a file ENOTDIR', E(os.rename, 'src', 'b'), 'ENOTDIR')
    check('rename a directory into itself EINVAL', E(os.rename, 'src', 'src/inner'), 'EINVAL')
    os.mkdir('src/deep')
    check('rename a directory into its descendant EINVAL', E(os.rename, 'src', 'src/deep/x'), 'EINVAL')
    check('rename to the same name succeeds', E(os.rename, 'b', 'b'), 'OK')
    os.link('b', 'b2')
    check('rename between links of one file succeeds', E(os.rename, 'b', 'b2'), 'OK')
    check('... both names remain', (kind('b'), kind('b2')), ('file', 'file'))
    check('rename of . EBUSY or EINVAL', E(os.rename, '.', 'x'), OneOf('EBUSY', 'EINVAL'))
    check('rename of .. EBUSY or EINVAL', E(os.rename, '..', 'x'), OneOf('EBUSY', 'EINVAL'))
    check('rename to . EBUSY or EINVAL', E(os.rename, 'src', '.'), OneOf('EBUSY', 'EINVAL', 'EEXIST', 'ENOTEMPTY'))
    check('rename a symlink renames the link', E(os.rename, 'lf', 'lf2'), 'OK')
    check('... a symlink', (kind('lf2'), os.readlink('lf2')), ('symlink', 'f'))
    check('rename over a symlink replaces the symlink', E(os.rename, 'b2', 'ld'), 'OK')
    check('... the directory it pointed to stays', kind('e'), 'dir')
    os.mkfifo('p')
    check('rename a fifo', (E(os.rename, 'p', 'p2'), kind('p2')), ('OK', 'fifo'))
    make_socket('s')
    check('rename a socket', (E(os.rename, 's', 's2'), kind('s2')), ('OK', 'socket'))
    os.mkdir('m1')
    os.mkdir('m2')
    os.mkdir('m1/child')
    n1, n2 = nlink('m1'), nlink('m2')
    os.rename('m1/child', 'm2/child')
    check('moving a directory lowers the old parent link count', nlink('m1'), n1 - 1)
    check('moving a directory raises the new parent link count', nlink('m2'), n2 + 1)
    check('.. of the moved directory is the new parent', os.lstat('m2/child/..').st_ino == os.lstat('m2').st_ino, True)
    write('c')
    before = os.lstat('c')
    dbefore = os.lstat('.')
    tick()
    os.rename('c', 'c2')
    check('rename marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('rename leaves the file mtime', os.lstat('c2').st_mtime_ns, before.st_mtime_ns)
    check('missing source ENOENT', E(os.rename, 'missing', 'x'), 'ENOENT')
    check('target in a missing directory ENOENT', E(os.rename, 'c2', 'nowhere/x'), 'ENOENT')
    check('trailing slash on a file source ENOTDIR', E(os.rename, 'c2/', 'x'), 'ENOTDIR')
    check('trailing slash on a directory works', E(os.rename, 'm1/', 'm3/'), 'OK')
    path_errors(lambda p: os.rename(p, 'tgt'))
    path_errors(lambda p: os.rename('c2', p), creating=True)
    if not ROOT:
        check('rename out of a directory without write permission EACCES', E(os.rename, 'ro/x', 'y'), OneOf('EACCES', 'ENOENT'))
        check('rename into a directory without write permission EACCES', E(os.rename, 'c2', 'ro/c2'), 'EACCES')
        check('rename of a foreign file in a sticky directory EPERM', E(os.rename, 'sticky/theirs', 'sticky/mine'), 'EPERM')
        check('rename of an own file in a sticky directory', E(os.rename, 'sticky/own', 'sticky/own2'), 'OK')
    else:
        check('root renames into a read-only directory', E(os.rename, 'c2', 'ro/c2'), 'OK')
        check('root renames a foreign file in a sticky directory', E(os.rename, 'sticky/theirs', 'sticky/mine'), 'OK')


def t_rmdir():
    section('rmdir')
    check('rmdir an empty directory', E(os.rmdir, 'e'), 'OK')
    check('... gone', kind('e'), 'ENOENT')
    check('rmdir a non-empty directory', E(os.rmdir, 'd'), OneOf('ENOTEMPTY', 'EEXIST'))
    check('... still there', kind('d/sub'), 'file')
    check('rmdir a file ENOTDIR', E(os.rmdir, 'f'), 'ENOTDIR')
    check('rmdir a symlink to a directory ENOTDIR', E(os.rmdir, 'ld'), 'ENOTDIR')
    check('rmdir a dangling symlink ENOTDIR', E(os.rmdir, 'dangling'), 'ENOTDIR')
    check('rmdir of . EINVAL', E(os.rmdir, '.'), 'EINVAL')
    check('rmdir of d/. EINVAL', E(os.rmdir, 'd/.'), 'EINVAL')
    check('rmdir of .. ENOTEMPTY', E(os.rmdir, 'd/..'), OneOf('ENOTEMPTY', 'EEXIST'))
    check('rmdir a missing directory ENOENT', E(os.rmdir, 'missing'), 'ENOENT')
    check('rmdir with a trailing slash', (E(os.mkdir, 'ts'), E(os.rmdir, 'ts/')), ('OK', 'OK'))
    os.mkfifo('p')
    check('rmdir a fifo ENOTDIR', E(os.rmdir, 'p'), 'ENOTDIR')
    os.mkdir('par')
    for i in range(3):
        os.mkdir(f'par/c{i}')
    n = nlink('par')
    check('parent link count counts subdirectories', n, 5)
    os.rmdir('par/c0')
    check('rmdir lowers the parent link count', nlink('par'), n - 1)
    os.rmdir('par/c1')
    check('... again', nlink('par'), n - 2)
    dbefore = os.lstat('par')
    tick()
    os.rmdir('par/c2')
    check('rmdir marks the parent mtime', os.lstat('par').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('rmdir marks the parent ctime', os.lstat('par').st_ctime_ns > dbefore.st_ctime_ns, True)
    check('the parent is empty now', os.listdir('par'), [])
    check('rmdir of the now empty parent', E(os.rmdir, 'par'), 'OK')
    os.mkdir('deep')
    os.mkdir('deep/er')
    check('rmdir of a directory holding a directory', E(os.rmdir, 'deep'), OneOf('ENOTEMPTY', 'EEXIST'))
    os.rmdir('deep/er')
    check('... then it can go', E(os.rmdir, 'deep'), 'OK')
    os.mkdir('open')
    fd = os.open('open', os.O_RDONLY)
    check('rmdir of an open directory', E(os.rmdir, 'open'), 'OK')
    check('... listing it gives nothing', V(os.listdir, fd), [])
    check('... creating in it ENOENT', E(os.open, '/proc/self/fd/%d/x' % fd, os.O_WRONLY | os.O_CREAT, 0o644), 'ENOENT')
    os.close(fd)
    os.mkdir('hidden')
    write('hidden/.dot')
    check('a directory with only a dot file is not empty', E(os.rmdir, 'hidden'), OneOf('ENOTEMPTY', 'EEXIST'))
    os.mkdir('kinds')
    os.mkfifo('kinds/p')
    check('a directory holding a fifo is not empty', E(os.rmdir, 'kinds'), OneOf('ENOTEMPTY', 'EEXIST'))
    os.unlink('kinds/p')
    os.symlink('nowhere', 'kinds/l')
    check('a directory holding a dangling symlink is not empty', E(os.rmdir, 'kinds'), OneOf('ENOTEMPTY', 'EEXIST'))
    os.unlink('kinds/l')
    check('... empty again it goes', E(os.rmdir, 'kinds'), 'OK')
    check('rmdir of d/sub/ (a file) ENOTDIR', E(os.rmdir, 'd/sub/'), 'ENOTDIR')
    check('rmdir of a path ending in /. EINVAL', E(os.rmdir, 'e2/.' if os.path.isdir('e2') else 'd/.'), 'EINVAL')
    os.mkdir('ren')
    os.rename('ren', 'ren2')
    check('rmdir of a renamed directory', E(os.rmdir, 'ren2'), 'OK')
    check('... gone from the listing', 'ren2' in os.listdir('.'), False)
    os.mkdir('n' * 255)
    check('rmdir of a name of NAME_MAX bytes', E(os.rmdir, 'n' * 255), 'OK')
    path_errors(os.rmdir)
    if not ROOT:
        os.mkdir('ro2')
        os.mkdir('ro2/x')
        os.chmod('ro2', 0o555)
        check('rmdir in a directory without write permission EACCES', E(os.rmdir, 'ro2/x'), 'EACCES')
        check('rmdir of a foreign directory in a sticky directory EPERM', E(os.rmdir, 'sticky/theirdir'), 'EPERM')
        check('rmdir of an own directory in a sticky directory', E(os.rmdir, 'sticky/owndir'), 'OK')
    else:
        check('root removes a foreign directory in a sticky directory', E(os.rmdir, 'sticky/theirdir'), 'OK')


def t_symlink():
    section('symlink')
    check('symlink succeeds', E(os.symlink, 'f', 's1'), 'OK')
    check('... a symlink', kind('s1'), 'symlink')
    check('... readlink gives the target', os.readlink('s1'), 'f')
    check('... it resolves', read('s1'), b'hello')
    check('... its size is the length of the target', os.lstat('s1').st_size, 1)
    check('... owned by the caller', (os.lstat('s1').st_uid, os.lstat('s1').st_gid), (AS_UID, AS_GID))
    check('... link count 1', nlink('s1'), 1)
    check('a symlink to nothing', E(os.symlink, 'no/such/thing', 's2'), 'OK')
    check('... dangling', kind('s2'), 'symlink')
    check('... stat of it ENOENT', E(os.stat, 's2'), 'ENOENT')
    check('an absolute target', (E(os.symlink, '/etc/hostname', 's3'), os.readlink('s3')), ('OK', '/etc/hostname'))
    check('a target with .. components', (E(os.symlink, '../x/./y', 's4'), os.readlink('s4')), ('OK', '../x/./y'))
    check('a target of 4095 bytes', E(os.symlink, 't' * 4095, 's5'), 'OK')
    check('... kept whole', len(os.readlink('s5')), 4095)
    check('a target of 4096 bytes ENAMETOOLONG', E(os.symlink, 't' * 4096, 's6'), 'ENAMETOOLONG')
    check('an empty target ENOENT', E(os.symlink, '', 's7'), 'ENOENT')
    check('a target with odd bytes', (E(os.symlink, 'sp ace\ttab\nnl', 's8'), os.readlink('s8')), ('OK', 'sp ace\ttab\nnl'))
    check('existing name EEXIST', E(os.symlink, 'f', 'f'), 'EEXIST')
    check('existing directory EEXIST', E(os.symlink, 'f', 'd'), 'EEXIST')
    check('existing dangling symlink EEXIST', E(os.symlink, 'f', 'dangling'), 'EEXIST')
    check('a trailing slash on the new name', E(os.symlink, 'f', 'slash/'), OneOf('ENOENT', 'EEXIST', 'ENOTDIR'))
    check('a symlink to a directory', (E(os.symlink, 'd', 's9'), os.listdir('s9')), ('OK', ['sub']))
    check('a symlink inside a directory', (E(os.symlink, '../f', 'd/up'), read('d/up')), ('OK', b'hello'))
    check('a chain of symlinks resolves', (E(os.symlink, 's1', 's10'), read('s10')), ('OK', b'hello'))
    dbefore = os.lstat('.')
    tick()
    os.symlink('f', 's11')
    check('symlink marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('a symlink target is never followed at creation', (E(os.symlink, 'loop', 's12'), kind('s12')), ('OK', 'symlink'))
    check('a name of exactly NAME_MAX bytes', E(os.symlink, 'f', 'n' * 255), 'OK')
    check('the symlink mode is 0777', perm('s1'), 0o777)
    os.mkfifo('p')
    check('a symlink to a fifo', (E(os.symlink, 'p', 's13'), kind('s13'), stat.S_ISFIFO(os.stat('s13').st_mode)), ('OK', 'symlink', True))
    check('readlink of a file EINVAL', E(os.readlink, 'f'), 'EINVAL')
    check('a symlink through a symlinked directory', (E(os.symlink, 'sub', 'ld/s14'), os.readlink('d/s14')), ('OK', 'sub'))
    check('a target naming itself', (E(os.symlink, 's15', 's15'), E(os.stat, 's15')), ('OK', 'ELOOP'))
    path_errors(lambda p: os.symlink('f', p), creating=True)
    if not ROOT:
        check('in a directory without write permission EACCES', E(os.symlink, 'f', 'ro/x'), 'EACCES')
    else:
        check('root makes a symlink in a read-only directory', E(os.symlink, 'f', 'ro/x'), 'OK')


def t_truncate():
    section('truncate')
    write('t', b'0123456789')
    check('truncate to a shorter length', E(os.truncate, 't', 4), 'OK')
    check('... size', os.lstat('t').st_size, 4)
    check('... content', read('t'), b'0123')
    check('truncate to a longer length', E(os.truncate, 't', 8), 'OK')
    check('... size', os.lstat('t').st_size, 8)
    check('... zero-filled', read('t'), b'0123\0\0\0\0')
    check('truncate to 0', (E(os.truncate, 't', 0), os.lstat('t').st_size), ('OK', 0))
    check('truncate to the same length', (E(os.truncate, 'f', 5), read('f')), ('OK', b'hello'))
    check('truncate to a large sparse length', (E(os.truncate, 't', 1 << 33), os.lstat('t').st_size), ('OK', 1 << 33))
    with open('t', 'rb') as fh:
        fh.seek((1 << 33) - 4)
        check('... reads zeroes at the end', fh.read(), b'\0' * 4)
    check('... shrinks back', (E(os.truncate, 't', 3), os.lstat('t').st_size), ('OK', 3))
    check('a negative length EINVAL', E(os.truncate, 't', -1), 'EINVAL')
    check('a directory EISDIR', E(os.truncate, 'd', 0), 'EISDIR')
    os.mkfifo('p')
    check('a fifo EINVAL', E(os.truncate, 'p', 0), OneOf('EINVAL', 'EISDIR'))
    check('truncate follows a symlink', E(os.truncate, 'lf', 2), 'OK')
    check('... the target shrank', read('f'), b'he')
    check('... the symlink did not', os.lstat('lf').st_size, 1)
    write('t', b'abcdef')
    before = os.lstat('t')
    tick()
    os.truncate('t', 2)
    after = os.lstat('t')
    check('truncate marks mtime', after.st_mtime_ns > before.st_mtime_ns, True)
    check('truncate marks ctime', after.st_ctime_ns > before.st_ctime_ns, True)
    before = after
    tick()
    os.truncate('t', 2)
    check('truncate to the same size still marks mtime', mtime_moved('t', before), True)
    fd = os.open('t', os.O_RDWR)
    check('ftruncate', (E(os.ftruncate, fd, 1), os.fstat(fd).st_size), ('OK', 1))
    check('ftruncate extends', (E(os.ftruncate, fd, 100), os.fstat(fd).st_size), ('OK', 100))
    check('ftruncate negative EINVAL', E(os.ftruncate, fd, -5), 'EINVAL')
    os.close(fd)
    fd = os.open('t', os.O_RDONLY)
    check('ftruncate of a read-only descriptor', E(os.ftruncate, fd, 0), OneOf('EBADF', 'EINVAL'))
    os.close(fd)
    os.chmod('t', 0o4755)
    os.truncate('t', 0)
    check('truncate clears S_ISUID', perm('t') & 0o4000, 0 if not ROOT else perm('t') & 0o4000)
    write('w', b'xyz')
    fd = os.open('w', os.O_RDWR)
    os.truncate('w', 1)
    check('a descriptor open before truncate reads the shorter file', os.read(fd, 10), b'x')
    os.close(fd)
    check('dangling symlink ENOENT', E(os.truncate, 'dangling', 0), 'ENOENT')
    check('symlink loop ELOOP', E(os.truncate, 'loop', 0), 'ELOOP')
    check('missing file ENOENT', E(os.truncate, 'missing', 0), 'ENOENT')
    check('trailing slash on a file ENOTDIR', E(os.truncate, 'f/', 0), OneOf('ENOTDIR', 'EISDIR'))
    path_errors(lambda p: os.truncate(p, 0))
    if not ROOT:
        os.chmod('w', 0o444)
        check('without write permission EACCES', E(os.truncate, 'w', 0), 'EACCES')
        check('a foreign file EACCES', E(os.truncate, 'foreign', 0), 'EACCES')
        check('... unchanged', os.lstat('foreign').st_size, 5)
        check('a foreign 0666 file', E(os.truncate, 'foreign666', 0), 'OK')
    else:
        os.chmod('w', 0o444)
        check('root truncates a read-only file', E(os.truncate, 'w', 0), 'OK')


def t_unlink():
    section('unlink')
    check('unlink a file', E(os.unlink, 'f'), 'OK')
    check('... gone', kind('f'), 'ENOENT')
    check('... the listing no longer shows it', 'f' in os.listdir('.'), False)
    write('a', b'A')
    os.link('a', 'b')
    check('unlink one link', E(os.unlink, 'a'), 'OK')
    check('... the other stays', read('b'), b'A')
    check('... its link count drops', nlink('b'), 1)
    check('unlink a directory', E(os.unlink, 'd'), OneOf('EISDIR', 'EPERM'))
    check('... the directory stays', kind('d'), 'dir')
    check('unlink a symlink removes the link', E(os.unlink, 'ld'), 'OK')
    check('... the target stays', kind('d'), 'dir')
    check('unlink a dangling symlink', E(os.unlink, 'dangling'), 'OK')
    check('unlink a symlink loop', E(os.unlink, 'loop'), 'OK')
    os.mkfifo('p')
    check('unlink a fifo', E(os.unlink, 'p'), 'OK')
    make_socket('s')
    check('unlink a socket', (E(os.unlink, 's'), kind('s')), ('OK', 'ENOENT'))
    write('o', b'open')
    fd = os.open('o', os.O_RDWR)
    check('unlink an open file', E(os.unlink, 'o'), 'OK')
    check('... still readable through the descriptor', os.pread(fd, 10, 0), b'open')
    os.pwrite(fd, b'more', 4)
    check('... still writable', os.pread(fd, 10, 0), b'openmore')
    check('... link count 0', os.fstat(fd).st_nlink, 0)
    os.close(fd)
    write('c')
    os.link('c', 'c2')
    before = os.lstat('c2')
    dbefore = os.lstat('.')
    tick()
    os.unlink('c')
    check('unlink marks the other link ctime', os.lstat('c2').st_ctime_ns > before.st_ctime_ns, True)
    check('unlink marks the parent mtime', os.lstat('.').st_mtime_ns > dbefore.st_mtime_ns, True)
    check('unlink a missing name ENOENT', E(os.unlink, 'missing'), 'ENOENT')
    check('unlink with a trailing slash on a file ENOTDIR', E(os.unlink, 'c2/'), 'ENOTDIR')
    check('unlink . EISDIR', E(os.unlink, '.'), OneOf('EISDIR', 'EPERM'))
    check('unlink a name again ENOENT', (E(os.unlink, 'c2'), E(os.unlink, 'c2')), ('OK', 'ENOENT'))
    write('many')
    for i in range(5):
        os.link('many', f'many{i}')
    for i in range(5):
        os.unlink(f'many{i}')
    check('link counts return to 1', nlink('many'), 1)
    write('d/inner')
    check('unlink in a subdirectory', (E(os.unlink, 'd/inner'), os.listdir('d')), ('OK', ['sub']))
    os.link('d/sub', 'e/other')
    check('unlink a link in another directory', (E(os.unlink, 'e/other'), nlink('d/sub')), ('OK', 1))
    write('r1')
    os.rename('r1', 'r2')
    check('unlink a renamed file', E(os.unlink, 'r2'), 'OK')
    write('m0')
    os.chmod('m0', 0)
    check('unlink a file of mode 000 (the directory decides)', E(os.unlink, 'm0'), 'OK')
    write('n' * 255)
    check('unlink a name of NAME_MAX bytes', E(os.unlink, 'n' * 255), 'OK')
    write('ro-f')
    check('unlink then recreate gives an empty new file', (E(os.unlink, 'ro-f'), E(lambda: os.close(os.open('ro-f', os.O_CREAT | os.O_WRONLY, 0o644))), os.lstat('ro-f').st_size), ('OK', 'OK', 0))
    path_errors(os.unlink)
    if not ROOT:
        check('unlink in a directory without write permission EACCES', E(os.unlink, 'ro/x'), OneOf('EACCES', 'ENOENT'))
        check('unlink of a foreign file in a sticky directory EPERM', E(os.unlink, 'sticky/theirs'), 'EPERM')
        check('unlink of an own file in a sticky directory', E(os.unlink, 'sticky/own'), 'OK')
        check('unlink of a foreign file in an own directory', E(os.unlink, 'foreign'), 'OK')
    else:
        check('root unlinks a foreign file in a sticky directory', E(os.unlink, 'sticky/theirs'), 'OK')


def t_utimensat():
    section('utimensat')
    st = lambda p='f': os.lstat(p)  # noqa: E731
    check('set both times', utimensat('f', (1000, 0), (2000, 0)), 'OK')
    check('... atime', st().st_atime_ns, 1000 * 10**9)
    check('... mtime', st().st_mtime_ns, 2000 * 10**9)
    check('nanoseconds kept', utimensat('f', (1000, 123456789), (2000, 987654321)), 'OK')
    check('... atime ns', st().st_atime_ns, 1000 * 10**9 + 123456789)
    check('... mtime ns', st().st_mtime_ns, 2000 * 10**9 + 987654321)
    check('UTIME_OMIT for atime', utimensat('f', (0, UTIME_OMIT), (3000, 5)), 'OK')
    check('... atime unchanged', st().st_atime_ns, 1000 * 10**9 + 123456789)
    check('... mtime set', st().st_mtime_ns, 3000 * 10**9 + 5)
    check('UTIME_OMIT for mtime', utimensat('f', (4000, 7), (0, UTIME_OMIT)), 'OK')
    check('... atime set', st().st_atime_ns, 4000 * 10**9 + 7)
    check('... mtime unchanged', st().st_mtime_ns, 3000 * 10**9 + 5)
    before = st()
    tick()
    check('both UTIME_OMIT', utimensat('f', (0, UTIME_OMIT), (0, UTIME_OMIT)), 'OK')
    check('... nothing changes', (st().st_atime_ns, st().st_mtime_ns), (before.st_atime_ns, before.st_mtime_ns))
    now = time.time_ns()
    check('UTIME_NOW for both', utimensat('f', (0, UTIME_NOW), (0, UTIME_NOW)), 'OK')
    check('... mtime is now', abs(st().st_mtime_ns - now) < 5 * 10**9, True)
    check('... atime is now', abs(st().st_atime_ns - now) < 5 * 10**9, True)
    check('NULL times set both to now', (utimensat('f', (1, 0), (1, 0)), utimensat('f', None, None)), ('OK', 'OK'))
    check('... mtime is now', abs(st().st_mtime_ns - time.time_ns()) < 5 * 10**9, True)
    check('UTIME_NOW for mtime, explicit atime', utimensat('f', (5000, 0), (0, UTIME_NOW)), 'OK')
    check('... atime explicit', st().st_atime_ns, 5000 * 10**9)
    check('times past 2038', utimensat('f', (2**33, 1), (2**33 + 5, 2)), 'OK')
    check('... atime past 2038', st().st_atime_ns, 2**33 * 10**9 + 1)
    check('... mtime past 2038', st().st_mtime_ns, (2**33 + 5) * 10**9 + 2)
    check('times before 1970', utimensat('f', (-1000, 0), (-2000, 500)), 'OK')
    check('... mtime before 1970', st().st_mtime_ns, -2000 * 10**9 + 500)
    check('... atime before 1970', st().st_atime_ns, -1000 * 10**9)
    check('time zero', (utimensat('f', (0, 0), (0, 0)), st().st_mtime_ns), ('OK', 0))
    check('nanoseconds of 10^9 EINVAL', utimensat('f', (1, 10**9), (1, 0)), 'EINVAL')
    check('negative nanoseconds EINVAL', utimensat('f', (1, 0), (1, -1)), 'EINVAL')
    before = st()
    tick()
    utimensat('f', (6000, 0), (6000, 0))
    check('utimensat marks ctime', st().st_ctime_ns > before.st_ctime_ns, True)
    check('follows a symlink', utimensat('lf', (7000, 0), (7000, 1)), 'OK')
    check('... the target changed', st().st_mtime_ns, 7000 * 10**9 + 1)
    check('AT_SYMLINK_NOFOLLOW sets the symlink itself', utimensat('lf', (8000, 0), (8000, 3), AT_SYMLINK_NOFOLLOW), 'OK')
    check('... the symlink mtime', st('lf').st_mtime_ns, 8000 * 10**9 + 3)
    check('... the target kept its mtime', st().st_mtime_ns, 7000 * 10**9 + 1)
    check('a directory', (utimensat('d', (9000, 0), (9000, 9)), st('d').st_mtime_ns), ('OK', 9000 * 10**9 + 9))
    os.mkfifo('p')
    check('a fifo', (utimensat('p', (9000, 0), (9100, 0)), st('p').st_mtime_ns), ('OK', 9100 * 10**9))
    check('a dangling symlink ENOENT', utimensat('dangling', (1, 0), (1, 0)), 'ENOENT')
    check('a symlink loop ELOOP', utimensat('loop', (1, 0), (1, 0)), 'ELOOP')
    check('a missing file ENOENT', utimensat('missing', (1, 0), (1, 0)), 'ENOENT')
    check('a trailing slash on a file ENOTDIR', utimensat('f/', (1, 0), (1, 0)), 'ENOTDIR')
    path_errors(lambda p: os.utime(p, ns=(1, 1)))
    check('os.utime with ns', (E(os.utime, 'f', ns=(11, 22)), st().st_atime_ns, st().st_mtime_ns), ('OK', 11, 22))
    if not ROOT:
        check('explicit times on a foreign file EPERM', utimensat('foreign666', (1, 0), (1, 0)), 'EPERM')
        check('UTIME_NOW on a foreign writable file', utimensat('foreign666', (0, UTIME_NOW), (0, UTIME_NOW)), 'OK')
        check('UTIME_NOW on a foreign read-only file EACCES', utimensat('foreign', (0, UTIME_NOW), (0, UTIME_NOW)), 'EACCES')
        check('NULL times on a foreign read-only file EACCES', utimensat('foreign', None, None), 'EACCES')
        check('both UTIME_OMIT on a foreign file', utimensat('foreign', (0, UTIME_OMIT), (0, UTIME_OMIT)), OneOf('OK', 'EPERM'))
    else:
        check('root sets explicit times on a foreign file', utimensat('foreign', (1, 0), (1, 0)), 'OK')


SECTIONS = [t_chmod, t_chown, t_link, t_mkdir, t_mkfifo, t_mknod, t_open, t_rename, t_rmdir, t_symlink, t_truncate, t_unlink, t_utimensat]


def lay(name):
    """Per section, as root: foreign-owned fixtures inside the section directory."""
    d = os.path.join(WORK, name)
    foreign(os.path.join(d, 'foreign'), 0o644)
    foreign(os.path.join(d, 'foreign600'), 0o600)
    foreign(os.path.join(d, 'foreign666'), 0o666)
    foreign(os.path.join(d, 'fdir'), 0o755, 'dir')
    fg = os.path.join(d, 'fgroup')
    write(fg)
    os.chown(fg, AS_UID, FOREIGN)
    os.chmod(fg, 0o755)
    sticky = os.path.join(d, 'sticky')
    os.mkdir(sticky, 0o777)
    os.chmod(sticky, 0o1777)
    foreign(os.path.join(sticky, 'theirs'), 0o666)
    foreign(os.path.join(sticky, 'theirdir'), 0o777, 'dir')
    write(os.path.join(sticky, 'own'))
    os.chown(os.path.join(sticky, 'own'), AS_UID, AS_GID)
    os.mkdir(os.path.join(sticky, 'owndir'))
    os.chown(os.path.join(sticky, 'owndir'), AS_UID, AS_GID)


def main():
    os.umask(0)
    # Section directories are made by the test user (so it owns them); foreign fixtures go in
    # as root first, so the directories are made here as root and handed over.
    for fn in SECTIONS:
        name = fn.__name__[2:]
        d = os.path.join(WORK, name)
        os.mkdir(d, 0o755)
        os.chown(d, AS_UID, AS_GID)
        lay(name)
    if not ROOT:
        os.setgroups(GROUPS)
        os.setgid(AS_GID)
        os.setuid(AS_UID)
    for fn in SECTIONS:
        try:
            fn()
        except Exception as e:  # a crash of one section is reported, not hidden
            results.append([f'{fn.__name__[2:]}:crash', False, repr(e), 'no exception'])
    print(json.dumps({'uid': os.getuid(), 'results': results}))


if __name__ == '__main__':
    main()
