/**
 * glibc tuning for a process that runs one large write and exits (the `layerfs workspace commit`
 * command): the mount daemon's settings, applied by the same function (lib/fuse/budget.ts). A
 * library user's process is left as it is: what a commit holds is bounded by its own budgets,
 * not by these settings.
 */
import { applyGlibcBudget } from '../fuse/budget.js';

/** Applies the tuning; true when glibc took both settings (false elsewhere). Call before the work starts. */
export function tuneMemoryForCommand(): boolean {
  return applyGlibcBudget();
}
