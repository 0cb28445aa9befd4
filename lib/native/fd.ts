/**
 * read(2)/write(2) for a loop that serves a device (the FUSE serving thread): a failure is
 * returned as -errno, never thrown, since errors such as EINTR or ENOENT are routine there.
 */
import { native } from './binding.js';

/** Reads once into `buffer`: the bytes read, or -errno. Blocks the calling thread. */
export function fdRead(fd: number, buffer: Uint8Array): number {
  return native.fdRead(fd, buffer);
}

/** Writes `buffer`'s first `length` bytes once: the bytes written, or -errno. */
export function fdWrite(fd: number, buffer: Uint8Array, length: number): number {
  return native.fdWrite(fd, buffer, length);
}
