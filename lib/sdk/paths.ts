import { LayerFsError } from '../errors.js';

/**
 * A path inside a state, as the SDK accepts it: relative, '/'-separated, no '.' or '..'
 * components, no NUL. '' or '.' is the root. Buffers allow names that are not UTF-8.
 */
export function splitStatePath(path: string | Buffer | undefined): Buffer[] {
  if (path === undefined) return [];
  const buf = typeof path === 'string' ? Buffer.from(path, 'utf8') : path;
  if (!Buffer.isBuffer(buf)) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'a path inside a state must be a string or Buffer');
  const display = buf.toString();
  if (buf.length > 0 && buf[0] === 0x2f) {
    throw new LayerFsError('ERR_UNSAFE_PATH', `absolute path ${JSON.stringify(display)}: paths inside a state are relative to its root`, { path: display, hint: 'drop the leading /' });
  }
  if (buf.includes(0)) throw new LayerFsError('ERR_UNSAFE_PATH', `path ${JSON.stringify(display)} contains a NUL byte`, { path: display });
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= buf.length; i++) {
    if (i === buf.length || buf[i] === 0x2f) {
      const part = buf.subarray(start, i);
      start = i + 1;
      if (part.length === 0 || (part.length === 1 && part[0] === 0x2e)) continue;
      if (part.length === 2 && part[0] === 0x2e && part[1] === 0x2e) {
        throw new LayerFsError('ERR_UNSAFE_PATH', `path ${JSON.stringify(display)} contains '..'`, { path: display, hint: 'paths inside a state cannot leave it' });
      }
      if (part.length > 255) throw new LayerFsError('ERR_INVALID_ARGUMENT', `a name in ${JSON.stringify(display)} is longer than 255 bytes`, { path: display });
      parts.push(Buffer.from(part));
    }
  }
  return parts;
}
