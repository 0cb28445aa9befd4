/**
 * glibc tuning for a process that runs one large write and exits (the `layerfs workspace commit`
 * command): the mount daemon's settings (lib/fuse/budget.ts). Blocks of MMAP_THRESHOLD bytes or
 * more are mapped and unmapped, so a freed row, frame or job buffer goes back to the system at
 * once instead of the threshold rising to the largest block freed so far and such blocks
 * filling the heap; the threads share at most ARENA_MAX arenas. A library user's process is left
 * as it is: what a commit holds is bounded by its own budgets, not by these settings.
 */
import { ARENA_MAX, MMAP_THRESHOLD } from '../fuse/budget.js';
import { mallocTune } from '../native/info.js';

/** Applies the tuning; true when glibc took both settings (false elsewhere). Call before the work starts. */
export function tuneMemoryForCommand(): boolean {
  return mallocTune(MMAP_THRESHOLD, ARENA_MAX);
}
