/**
 * The frame cipher of an encrypted remote, apart from the connection so that the connection can
 * hold one and encryption.ts can configure the connection without the two importing each other.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { LayerFsError } from '../errors.js';

export const CIPHER = 'aes-256-gcm';
const NONCE = 12;
const TAG = 16;
/** Bytes a sealed frame adds to the frame. */
export const SEAL_OVERHEAD = NONCE + TAG;
const AAD = Buffer.from('layerfs remote frame v1');

function derive(key: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `layerfs remote ${purpose} v1`, 32));
}

/** What the remote stores to recognize the key: an HMAC under a key derived apart from the cipher's. */
export function keyCheck(key: Buffer): string {
  return createHmac('sha256', derive(key, 'key check')).update('layerfs remote key check').digest('hex');
}

export class FrameCipher {
  private readonly key: Buffer;
  /** History rows' free text (sealed apart from frames, bound to the row's table and id). */
  private readonly rowKey: Buffer;
  /** Names as the remote keys them: an HMAC, so lookups by name still work. */
  private readonly nameKey: Buffer;

  constructor(key: Buffer) {
    this.key = derive(key, 'frames');
    this.rowKey = derive(key, 'rows');
    this.nameKey = derive(key, 'names');
  }

  seal(plain: Buffer, aad = AAD, key = this.key): Buffer {
    const nonce = randomBytes(NONCE);
    const c = createCipheriv(CIPHER, key, nonce);
    c.setAAD(aad);
    const body = c.update(plain);
    const rest = c.final();
    return Buffer.concat([nonce, body, rest, c.getAuthTag()]);
  }

  /** A history row's sealed fields, bound to `what` (its table and id): the server cannot move them to another row. */
  sealRow(plain: Buffer, what: string): Buffer {
    return this.seal(plain, Buffer.from(`layerfs remote row v1 ${what}`), this.rowKey);
  }

  openRow(sealed: Buffer, what: string, where: string): Buffer {
    return this.open(sealed, where, Buffer.from(`layerfs remote row v1 ${what}`), this.rowKey);
  }

  /** The name column's value for a LayerStack or Branch name: equal names give equal tags, nothing else shows. */
  nameTag(kind: string, name: string): string {
    return `hmac:${createHmac('sha256', this.nameKey).update(`${kind}\0${name}`).digest('hex')}`;
  }

  /** The frame inside `sealed`; damage or forgery (the tag does not match) is ERR_CORRUPT. */
  open(sealed: Buffer, where: string, aad = AAD, key = this.key): Buffer {
    if (sealed.length < SEAL_OVERHEAD) throw damaged(where);
    try {
      const d = createDecipheriv(CIPHER, key, sealed.subarray(0, NONCE));
      d.setAAD(aad);
      d.setAuthTag(sealed.subarray(sealed.length - TAG));
      return Buffer.concat([d.update(sealed.subarray(NONCE, sealed.length - TAG)), d.final()]);
    } catch (e) {
      throw damaged(where, e);
    }
  }
}

function damaged(where: string, cause?: unknown): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', `an encrypted frame from ${where} does not open (damaged or forged)`, { cause, hint: 'the remote holds damaged or forged data; nothing of it was kept' });
}
