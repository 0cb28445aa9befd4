/** lib/remote: remotes on PostgreSQL — push, fetch, clone, remote heads (docs/REMOTES.md). */
export { RemoteConnection, mapPgError } from './connection.js';
export { initRemoteSchema, checkRemoteSchema, REMOTE_SCHEMA_VERSION } from './schema.js';
export { addRemote, getRemote, listRemotes, removeRemote, remoteRefs, type RemoteRow, type RemoteRefRow } from './local.js';
export { pushRef, type PushResult, type PushOptions, type PushReconciliation } from './push.js';
export type { PushConflict } from './push-reconcile.js';
export { fetchRemote, type FetchResult, type FetchedRef, type RefOutcome } from './fetch.js';
export { BATCH_BYTES, type TransferStats, type TransferOptions } from './transfer.js';
export { displayUrl, withoutPassword, ENV_URL } from './local.js';
export { verifyRemote, type RemoteVerifyReport } from './verify.js';
export { loadRemoteKey, useRemoteKey, keyFileVariable, type KeyOptions } from './encryption.js';
