/** The backend a mount asks for (or the environment names): only `kernel` is left. */
import { LayerFsError } from '../errors.js';
import { kernelBackendUsable } from './kernel.js';
import type { Backend } from './protocol.js';

/** Named a backend once; only `kernel` is left (fuse-native, its other value, is refused with a hint). */
const BACKEND_ENV = 'LAYERFS_FUSE_BACKEND';

/** The backend to serve a mount with, from the request's `backend` (or the environment); typed errors otherwise. */
export function backendFor(asked: unknown): Backend {
  const fromEnv = asked === undefined;
  const want = asked ?? process.env[BACKEND_ENV] ?? 'auto';
  if (want === 'fuse-native') {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `the fuse-native backend was removed: every mount is served over /dev/fuse by the daemon itself`, {
      name: fromEnv ? BACKEND_ENV : 'backend',
      hint: fromEnv ? `unset ${BACKEND_ENV} (or set it to kernel) and restart the daemon` : `leave backend out, or ask for 'kernel'`,
    });
  }
  if (want !== 'auto' && want !== 'kernel') throw new LayerFsError('ERR_INVALID_ARGUMENT', `backend must be 'kernel'`);
  // root: mount(2) from the addon; an ordinary user: fusermount3's descriptor (attach.ts).
  if (kernelBackendUsable()) return 'kernel';
  throw new LayerFsError('ERR_INVALID_ARGUMENT', 'FUSE mounts need /dev/fuse, usable by this user, and (for an ordinary user) fusermount3', { hint: 'Debian: apt-get install fuse3; /dev/fuse is mode 0666 on most systems' });
}
