/**
 * How far V8 lets each heap's old generation grow past what its last full collection kept,
 * percent (V8's `--heap-growing-percent`), for the mount daemon and the `layerfs` command. V8's
 * own factor (up to 4×) let a whole-tree commit's heap, and the daemon's serving thread after a
 * whole-tree rsync, reach about twice their live objects, most of it garbage awaiting the next
 * full collection (docs/DECISIONS.md, "A command's heap grows by 40 % between full collections").
 * Apart from budget.ts so that the command can read it without loading the addon.
 */
export const HEAP_GROWING_PERCENT = 40;

/** The V8 flag that sets it. */
export const HEAP_GROWING_FLAG = `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
