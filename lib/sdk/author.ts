/** Who a Commit is by when the caller names no one: like git's user.name, but with no config file. */
import { hostname, userInfo } from 'node:os';

export function defaultAuthor(): string {
  const env = process.env.LAYERFS_AUTHOR;
  if (env) return env;
  let user = process.env.USER ?? '';
  try {
    user = userInfo().username;
  } catch {
    // a uid with no passwd entry (containers): fall back to $USER or the uid
  }
  return `${user || `uid${process.getuid?.() ?? ''}`}@${hostname()}`;
}
