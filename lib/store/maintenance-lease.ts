/**
 * The Store's maintenance lease: `db gc` and `db repack` run one at a time on a Store, across
 * processes, as git's gc.pid lock makes them, and neither runs while a fetch stores objects it
 * publishes only at its end. gc keeps what a state published during its sweep reaches, and the
 * bases of that; it cannot see that a concurrent repack stored an object it had already found
 * live as a delta against another one (repack may take any object its rows hold as a base,
 * garbage included), nor what a fetch has stored or found stored but not yet published. The
 * exclusive lease is the meta row `maintenance` (JSON: the pass, its process, since when, its
 * token); each shared holder (fetch, push) has a row `maintenance:<token>`. A holder whose
 * process is proven gone (the caller's `gone`: killed, crashed, rebooted) holds nothing.
 */
import { randomBytes } from 'node:crypto';
import { LayerFsError } from '../errors.js';
import type { Db } from './store-file.js';

/** A process as the lease records it (pid, its start time in /proc, the boot it runs in). */
export interface LeaseHolder {
  pid: number;
  startTime: string | null;
  bootId: string | null;
}

/** Who may take the lease: this process, and how to tell whether another holder is gone. */
export interface MaintenanceClaim {
  holder: LeaseHolder;
  gone(holder: LeaseHolder): boolean;
}

interface Lease extends LeaseHolder {
  pass: string;
  sinceMs: number;
  /** Which pass of its process holds it: two Clients of one process run one pass at a time too. */
  token: string;
}

const KEY = 'maintenance';
const SHARED = 'maintenance:';

function parse(value: string | undefined): Lease | undefined {
  if (value === undefined) return undefined;
  try {
    const v = JSON.parse(value) as Partial<Lease>;
    if (typeof v.pid === 'number' && typeof v.pass === 'string') return { pid: v.pid, startTime: v.startTime ?? null, bootId: v.bootId ?? null, pass: v.pass, sinceMs: Number(v.sinceMs) || 0, token: String(v.token ?? '') };
  } catch {
    // A row no writer of this format made: nobody holds it.
  }
  return undefined;
}

function busy(path: string, held: Lease, pass: string): LayerFsError {
  const since = new Date(held.sinceMs).toISOString();
  const what = held.pass === 'gc' || held.pass === 'repack' ? `db ${held.pass}` : `a ${held.pass}`;
  return new LayerFsError('ERR_BUSY', `${what} is running on this Store (process ${held.pid}, since ${since})`, {
    path,
    running: held.pass,
    pid: held.pid,
    hint: `run ${pass === 'gc' || pass === 'repack' ? `db ${pass}` : pass} again when it has finished: gc and repack run alone`,
  });
}

/** The live holders of the shared lease; the rows of holders proven gone are deleted. */
function sharedHolders(db: Db, claim: MaintenanceClaim): Lease[] {
  const out: Lease[] = [];
  const rows = db.prepare("SELECT key, value FROM meta WHERE key > 'maintenance:' AND key < 'maintenance;'").all() as { key: string; value: string }[];
  for (const r of rows) {
    const held = parse(r.value);
    if (held && !claim.gone(held)) out.push(held);
    else db.prepare('DELETE FROM meta WHERE key = ?').run(r.key);
  }
  return out;
}

/** Writes this pass's lease (the exclusive row, or a shared row of its own) and returns its token. */
function write(db: Db, shared: boolean, pass: string, claim: MaintenanceClaim): string {
  const lease: Lease = { ...claim.holder, pass, sinceMs: Date.now(), token: randomBytes(8).toString('hex') };
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(shared ? `${SHARED}${lease.token}` : KEY, JSON.stringify(lease));
  return lease.token;
}

/**
 * Takes the lease for `pass` inside the caller's write transaction and returns its token, or
 * throws ERR_BUSY naming the pass that holds it and its process (this one included). `shared`:
 * several such passes may hold it at once (fetch, push), none with gc or repack.
 */
export function takeMaintenance(db: Db, path: string, pass: string, claim: MaintenanceClaim, shared = false): string {
  const held = parse(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(KEY) as string | undefined);
  if (held && !claim.gone(held)) throw busy(path, held, pass);
  if (shared) return write(db, true, pass, claim);
  const other = sharedHolders(db, claim)[0];
  if (other) throw busy(path, other, pass);
  return write(db, false, pass, claim);
}

/** Gives the lease back (inside the caller's write transaction), if the pass `token` names still has it. */
export function releaseMaintenance(db: Db, token: string): void {
  db.prepare('DELETE FROM meta WHERE key = ?').run(`${SHARED}${token}`);
  const held = parse(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(KEY) as string | undefined);
  if (held && held.token === token) db.prepare('DELETE FROM meta WHERE key = ?').run(KEY);
}
