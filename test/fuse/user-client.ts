// Run as an ordinary user by user-mount.ts: one FUSE client call against a Store, its result as
// one JSON line on stdout (a typed error as {"error": {code, message, ...}}).
//   node --import tsx user-client.ts <mount|commit|unmount|status|stop> <storePath> [json arguments]
import { commitFuse, daemonStatus, mountWorkspace, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';

const [op, storePath, json] = process.argv.slice(2);
const args = (json ? JSON.parse(json) : {}) as Record<string, unknown>;

async function call(): Promise<unknown> {
  switch (op) {
    case 'mount':
      return mountWorkspace(storePath!, args as unknown as Parameters<typeof mountWorkspace>[1]);
    case 'commit':
      return commitFuse(storePath!, String(args.workspaceId));
    case 'unmount':
      return unmountWorkspace(storePath!, String(args.workspaceId), { discard: true });
    case 'status':
      return daemonStatus(storePath!);
    case 'stop':
      return stopDaemon(storePath!, { discard: true });
    default:
      throw new Error(`unknown op ${op}`);
  }
}

try {
  console.log(JSON.stringify({ result: await call() }));
} catch (e) {
  const err = e as { toJSON?: () => unknown; message?: string };
  console.log(JSON.stringify({ error: err.toJSON?.() ?? { message: String(err.message ?? e) } }));
}
process.exit(0);
