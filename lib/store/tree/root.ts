/**
 * A filesystem root object: the entry point of one complete state. Its id is what Layers and
 * Commits point to, so two states with equal roots are the same state.
 */
import { ByteReader, ByteWriter } from '../../format/bytes.js';
import { LayerFsError } from '../../errors.js';

export const ROOT_SERIAL = 1;
const ROOT_VERSION = 1;

export interface FsRoot {
  /** Root page of the inode table. */
  inodes: Buffer;
}

export function encodeRoot(r: FsRoot): Buffer {
  return new ByteWriter(40).u8(ROOT_VERSION).uv(ROOT_SERIAL).bytes(r.inodes).finish();
}

export function decodeRoot(data: Buffer, what: string): FsRoot {
  const rd = new ByteReader(data, what);
  const v = rd.u8();
  if (v !== ROOT_VERSION) throw new LayerFsError('ERR_CORRUPT', `${what}: unknown root version ${v}`);
  if (rd.uv() !== ROOT_SERIAL) throw new LayerFsError('ERR_CORRUPT', `${what}: unexpected root serial`);
  const inodes = Buffer.from(rd.bytes(32));
  rd.end();
  return { inodes };
}
