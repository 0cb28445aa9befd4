/**
 * lib/fuse: live FUSE Workspaces. A daemon per Store serves every mounted Workspace (over
 * /dev/fuse, from a serving thread per mount); loading this folder registers the fuse Projection with the
 * Workspace seam (lib/workspace/projection.ts), which is how the SDK reaches it.
 */
export { ensureDaemon, mountWorkspace, commitFuse, fuseChanges, unmountWorkspace, daemonStatus, stopDaemon, request, closeDaemonConnection, servedWorkspaces, type MountOptions, type RequestOptions } from './client.js';
export { daemonPaths, type Backend, type DaemonPaths, type DaemonStatus, type MountStatus, type MountRecord, type MountRequest, type FuseCommitOutcome, type FuseChanges, type UnmountOutcome, type StopOutcome, type RecoveryReport } from './protocol.js';
export { detachStale } from './mounttab.js';

/** Whether this machine can serve FUSE mounts at all (a cheap check before choosing the projection). */
export { fuseAvailable } from './probe.js';
export { fuseProjection } from './projection.js';
