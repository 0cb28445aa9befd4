/**
 * zstdTrainDictionary on a worker thread of its own, so the caller goes on meanwhile (an import
 * keeps scanning, hashing and holding content while its dictionary trains). The worker calls the
 * same addon function with the same input, so the dictionary is the one a call on this thread
 * would give. The result is taken without the event loop: poll() looks at the worker's message
 * port (receiveMessageOnPort), wait() sleeps on a shared word until the worker has posted it.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { findPackageRoot } from './binding.js';
import { zstdTrainDictionary } from './zstd-dict.js';

/** Plain CommonJS, run without the TypeScript loader: the worker only needs the addon. */
const WORKER = `
const { workerData } = require('node:worker_threads');
const ctl = new Int32Array(workerData.ctl);
let message = { error: 'no result' };
try {
  const addon = require(workerData.gypBuild)(workerData.root);
  const out = addon.zstdTrainDictionary(new Uint8Array(workerData.samples), new Uint32Array(workerData.sizes), workerData.capacity, workerData.k);
  message = { bytes: out === null ? null : new Uint8Array(out) };
} catch (e) {
  message = { error: String(e && e.message || e) };
} finally {
  workerData.port.postMessage(message);
  Atomics.store(ctl, 0, 1);
  Atomics.notify(ctl, 0);
}
`;

/** How long wait() sleeps for a worker before training on this thread instead. */
const WAIT_MS = 10 * 60 * 1000;

type Message = { bytes: Uint8Array | null } | { error: string };

/** One dictionary being trained on a worker thread (module comment). */
export class BackgroundTraining {
  private readonly ctl = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private result: { bytes: Buffer | null } | undefined;

  /** Starts training on `samples` (back to back, `sizes` each): the arguments of zstdTrainDictionary. */
  constructor(
    private readonly samples: Uint8Array,
    private readonly sizes: Uint32Array,
    private readonly capacity: number,
    private readonly k?: number,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const root = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
    const gypBuild = createRequire(join(root, 'package.json')).resolve('node-gyp-build');
    // The samples are copied once to the worker (the caller keeps its buffers).
    const worker = new Worker(WORKER, {
      eval: true,
      execArgv: [],
      workerData: { ctl: this.ctl.buffer, port: port2, root, gypBuild, samples, sizes, capacity, k },
      transferList: [port2],
    });
    // A process may exit while it trains: nothing waits for it but wait().
    worker.unref();
    this.port.unref();
    worker.on('error', () => undefined);
  }

  /** The dictionary (null: none trained) once the worker has it; undefined while it trains. */
  poll(): Buffer | null | undefined {
    if (this.result) return this.result.bytes;
    if (Atomics.load(this.ctl, 0) === 0) return undefined;
    return this.take();
  }

  /** The dictionary (null: none trained), waiting for the worker; trained here if the worker failed. */
  wait(): Buffer | null {
    if (this.result) return this.result.bytes;
    Atomics.wait(this.ctl, 0, 0, WAIT_MS);
    return this.take();
  }

  private take(): Buffer | null {
    const got = Atomics.load(this.ctl, 0) === 1 ? (receiveMessageOnPort(this.port)?.message as Message | undefined) : undefined;
    const bytes =
      got && 'bytes' in got ? (got.bytes === null ? null : Buffer.from(got.bytes.buffer, got.bytes.byteOffset, got.bytes.byteLength)) : zstdTrainDictionary(this.samples, this.sizes, this.capacity, this.k);
    this.result = { bytes };
    this.port.close();
    return bytes;
  }
}
