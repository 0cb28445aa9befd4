// `node --import ./load-trace.mjs …`: appends the URL of every module the process loads to the
// file named by $LAYERFS_LOAD_TRACE (one per line), to check what a command loads.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

export async function load(url, context, nextLoad) {
  if (process.env.LAYERFS_LOAD_TRACE) appendFileSync(process.env.LAYERFS_LOAD_TRACE, url + '\n');
  return nextLoad(url, context);
}

// Loaded by --import on the main thread: install this file as a hook (it runs on the hooks thread).
if (isMainThread) register(import.meta.url);
