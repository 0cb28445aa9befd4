/**
 * V8's heap growth for the `layerfs` command, as the mount daemon has it (lib/fuse/heap-growth.ts).
 * V8 reads the flag at each full collection, so setting it in the running process takes effect.
 * A library user's process keeps its own flags.
 */
import { setFlagsFromString } from 'node:v8';
import { HEAP_GROWING_FLAG } from '../fuse/heap-growth.js';

/** Sets the command's heap growth; call once, when the command starts. */
export function tuneHeapForCommand(): void {
  setFlagsFromString(HEAP_GROWING_FLAG);
}
