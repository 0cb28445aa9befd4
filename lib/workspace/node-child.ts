// Starting a Node child that loads code the way this process does: from dist/ nothing is needed,
// from sources the child needs the same `--import tsx`. Used by the execution supervisor, the
// mount daemon, the tests' and the bench's worker processes, so that all of them agree on which
// flags carry over.

const VALUE_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--conditions', '-C']);
const PLAIN_FLAGS = new Set(['--enable-source-maps', '--no-warnings', '--no-deprecation', '--preserve-symlinks', '--preserve-symlinks-main']);

/**
 * A loader specifier the child resolves the same wherever it starts: a child may run with another
 * cwd (the mount daemon runs in `/`), so a bare specifier such as `tsx` is resolved here, and a
 * relative one against this process's cwd.
 */
function absoluteSpecifier(value: string): string {
  if (/^(\.{0,2}\/|file:|data:|node:)/.test(value)) return value.startsWith('.') ? new URL(value, `file://${process.cwd()}/`).href : value;
  try {
    return import.meta.resolve(value);
  } catch {
    return value;
  }
}

/**
 * The flags of this process a child needs to load code the same way (`--import tsx` when running
 * from sources), without those that would change what it runs (-e, --test, --inspect…). tsx's
 * preflight is left out: it connects back to the tsx CLI that started this process to relay
 * signals, which a child meant to outlive it must not do.
 */
export function loaderFlags(execArgv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (VALUE_FLAGS.has(name)) {
      const value = eq > 0 ? a.slice(eq + 1) : execArgv[++i];
      if (value === undefined) break;
      if ((name === '--require' || name === '-r') && /[\\/]tsx[\\/]dist[\\/]preflight\.cjs$/.test(value)) continue;
      // -r and -C take no `=`: spell them long.
      const long = name === '-r' ? '--require' : name === '-C' ? '--conditions' : name;
      out.push(`${long}=${long === '--conditions' ? value : absoluteSpecifier(value)}`);
    } else if (PLAIN_FLAGS.has(name) || /^--(no-)?experimental-/.test(name)) {
      out.push(a);
    }
  }
  return out;
}

/** The argv of `process.execPath` that runs `entry` (a .ts under tsx or a .js) with `args`. */
export function nodeArgs(entry: string, ...args: string[]): string[] {
  // A TypeScript entry needs tsx even when this process runs without it (a compiled parent).
  const flags = loaderFlags();
  if (entry.endsWith('.ts') && !flags.some((f) => /^--import=.*tsx/.test(f))) flags.push(`--import=${absoluteSpecifier('tsx')}`);
  return [...flags, entry, ...args];
}
