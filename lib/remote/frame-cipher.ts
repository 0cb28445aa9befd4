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

  constructor(key: Buffer) {
    this.key = derive(key, 'frames');
  }

  seal(plain: Buffer): Buffer {
    const nonce = randomBytes(NONCE);
    const c = createCipheriv(CIPHER, this.key, nonce);
    c.setAAD(AAD);
    const body = c.update(plain);
    const rest = c.final();
    return Buffer.concat([nonce, body, rest, c.getAuthTag()]);
  }

  /** The frame inside `sealed`; damage or forgery (the tag does not match) is ERR_CORRUPT. */
  open(sealed: Buffer, where: string): Buffer {
    if (sealed.length < SEAL_OVERHEAD) throw damaged(where);
    try {
      const d = createDecipheriv(CIPHER, this.key, sealed.subarray(0, NONCE));
      d.setAAD(AAD);
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
