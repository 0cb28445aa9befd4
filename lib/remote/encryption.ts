/**
 * Client-side encryption of a remote's frames (docs/REMOTES.md "Client-side encryption"). A
 * remote is encrypted or not from its creation (`remote init` with a key); its meta rows say
 * which, with a key check value, so a missing or wrong key is a typed error before anything is
 * read or written. Each frame is sealed alone with AES-256-GCM (random 96-bit nonce; stored as
 * nonce ‖ ciphertext ‖ tag) under a key derived from the remote's key, which never leaves this
 * process. Object ids are computed before encryption, so negotiation and deduplication work as
 * without it, and a fetch opens each frame and then re-hashes it as always.
 */
import { readFileSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import type { RemoteConnection } from './connection.js';
import { CIPHER, FrameCipher, keyCheck } from './frame-cipher.js';

export { CIPHER, SEAL_OVERHEAD, FrameCipher, keyCheck } from './frame-cipher.js';

export interface KeyOptions {
  /** The remote's key: 32 bytes, or 64 hex digits or base64 of 32 bytes. */
  key?: Buffer | string;
  /** A file holding the key (same forms). */
  keyFile?: string;
}

function parseKey(raw: Buffer, from: string): Buffer {
  const text = raw.toString('latin1').trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(text)) {
    const b = Buffer.from(text, 'base64');
    if (b.length === 32) return b;
  }
  if (raw.length === 32) return Buffer.from(raw);
  throw new LayerFsError('ERR_INVALID_ARGUMENT', `the remote key from ${from} is not 32 bytes (raw, 64 hex digits or base64)`, { hint: 'make one with `head -c 32 /dev/urandom > KEYFILE && chmod 600 KEYFILE`' });
}

/** LAYERFS_REMOTE_KEY_FILE_ORIGIN for remote "origin": the name upper-cased, other characters as _. */
export function keyFileVariable(remote: string): string {
  return `LAYERFS_REMOTE_KEY_FILE_${remote.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/**
 * The key for `remote`, if any: `opts.key`, else `opts.keyFile`, else the file named by
 * LAYERFS_REMOTE_KEY_FILE_<REMOTE>, else by LAYERFS_REMOTE_KEY_FILE.
 */
export function loadRemoteKey(remote: string, opts: KeyOptions = {}): Buffer | undefined {
  if (opts.key !== undefined) return parseKey(typeof opts.key === 'string' ? Buffer.from(opts.key) : opts.key, 'the key option');
  const file = opts.keyFile ?? process.env[keyFileVariable(remote)] ?? process.env.LAYERFS_REMOTE_KEY_FILE;
  if (!file) return undefined;
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (e) {
    throw new LayerFsError('ERR_NOT_FOUND', `cannot read the remote key file ${file}: ${(e as Error).message}`, { path: file, cause: e, hint: 'check the key file path (--key-file or LAYERFS_REMOTE_KEY_FILE)' });
  }
  return parseKey(raw, file);
}

/** The remote's encryption meta rows (`known`: as checkRemoteSchema read them, saving a query). */
async function meta(conn: RemoteConnection, known?: Map<string, string>): Promise<{ encryption: string; check: string | null }> {
  const rows = known ? [...known].map(([key, value]) => ({ key, value })) : await conn.query<{ key: string; value: string }>(`SELECT key, value FROM layerfs.meta WHERE key IN ('encryption', 'key_check')`);
  const get = (k: string) => rows.find((r) => r.key === k)?.value ?? null;
  return { encryption: get('encryption') ?? 'none', check: get('key_check') };
}

/**
 * Checks the key against the remote's: an encrypted remote needs the right key, a plain one
 * takes none. Sets the connection's cipher.
 */
export async function useRemoteKey(conn: RemoteConnection, key: Buffer | undefined, known?: Map<string, string>): Promise<void> {
  const m = await meta(conn, known);
  if (m.encryption === 'none') {
    if (key) throw new LayerFsError('ERR_REMOTE_KEY', `the remote ${conn.name} is not encrypted, but a key was given`, { remote: conn.name, hint: 'leave out the key for this remote (its frames are stored in the clear; encryption is chosen at `remote init`)' });
    conn.cipher = null;
    return;
  }
  if (m.encryption !== CIPHER) throw new LayerFsError('ERR_REMOTE_SCHEMA', `the remote ${conn.name} is encrypted with ${m.encryption}, which this layerfs does not know`, { remote: conn.name, hint: 'upgrade layerfs' });
  if (!key) throw new LayerFsError('ERR_REMOTE_KEY', `the remote ${conn.name} is encrypted and no key was given`, { remote: conn.name, hint: `give its key file with --key-file, ${keyFileVariable(conn.name)} or LAYERFS_REMOTE_KEY_FILE` });
  if (keyCheck(key) !== m.check) throw new LayerFsError('ERR_REMOTE_KEY', `the key given for the remote ${conn.name} is not its key`, { remote: conn.name, hint: 'use the key file the remote was created with' });
  conn.cipher = new FrameCipher(key);
}

/**
 * At `remote init`: a key makes a remote that holds no objects yet an encrypted one; a remote
 * already encrypted, or already holding frames in the clear, keeps what it is (checked as any
 * command checks it).
 */
export async function initRemoteKey(conn: RemoteConnection, key: Buffer | undefined): Promise<void> {
  const m = await meta(conn);
  if (key && m.encryption === 'none') {
    const used = await conn.query('SELECT 1 FROM layerfs.objects LIMIT 1');
    if (used.length > 0) throw new LayerFsError('ERR_REMOTE_KEY', `the remote ${conn.name} already holds objects in the clear; it cannot become encrypted`, { remote: conn.name, hint: 'create an encrypted remote in a new database and push there' });
    await conn.query(`UPDATE layerfs.meta SET value = $1 WHERE key = 'encryption'`, [CIPHER]);
    await conn.query(`INSERT INTO layerfs.meta (key, value) VALUES ('key_check', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [keyCheck(key)]);
  }
  await useRemoteKey(conn, key);
}
