/**
 * Ended Workspaces leave no row; a short journal beside the Store (`<store>.d/ended-workspaces`)
 * remembers them so that a second `end`, or a status of one, says it has ended instead of that
 * it never existed. Best effort: losing the journal loses only that message.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface EndedWorkspace {
  id: string;
  path: string;
  endedAt: string;
}

const journal = (storePath: string) => `${storePath}.d/ended-workspaces`;

export function recordEnded(storePath: string, w: { id: string; path: string }): void {
  try {
    const file = journal(storePath);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    appendFileSync(file, JSON.stringify({ id: w.id, path: w.path, endedAt: new Date().toISOString() }) + '\n', { mode: 0o600 });
  } catch {
    /* only a later message depends on it */
  }
}

/** The ended Workspace `ref` names (id, id prefix or directory), newest first. */
export function findEnded(storePath: string, ref: string, dir: string): EndedWorkspace | undefined {
  let text: string;
  try {
    text = readFileSync(journal(storePath), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n').filter(Boolean).reverse();
  const wanted = ref.toLowerCase();
  for (const line of lines) {
    try {
      const e = JSON.parse(line) as EndedWorkspace;
      if (e.path === dir || (wanted.length >= 4 && /^[0-9a-f]+$/.test(wanted) && e.id.startsWith(wanted))) return e;
    } catch {
      /* a torn last line */
    }
  }
  return undefined;
}
