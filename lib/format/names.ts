import { LayerFsError } from '../errors.js';

/** LayerStack and Branch names: lowercase, 1–63 characters, no leading or trailing punctuation. */
export const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$/;

export function checkName(name: unknown, what: string): string {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new LayerFsError('ERR_INVALID_NAME', `invalid ${what} name ${JSON.stringify(name)}`, {
      name: typeof name === 'string' ? name : String(name),
      hint: `use 1-63 characters of a-z, 0-9, '.', '_' or '-', starting and ending with a letter or digit`,
    });
  }
  return name;
}
