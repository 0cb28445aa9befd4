/**
 * The daemon's socket: `<store>.d/daemon.sock` (0600) with a fresh random token in
 * `<store>.d/daemon.token` (0600), and the JSON-lines framing of each client connection.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, openSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { LayerFsError } from '../errors.js';
import { MAX_LINE, type DaemonPaths, type Response } from './protocol.js';

/** Requests of one connection being answered at once (more wait, unread, in the socket). */
const MAX_IN_FLIGHT = 32;
/** Answer bytes a client may leave unread before the daemon stops reading its requests. */
const MAX_UNREAD_ANSWERS = 1 << 20;

/**
 * How often a connection with requests in progress tells its client that the daemon moved on
 * (a line `{"progress":N}`, N changing whenever a commit stores more): the client's deadline runs
 * from the last such line, so a long commit that progresses is never given up on.
 */
export const HEARTBEAT_MS = 1000;

/** Writes a new token and listens on the socket; a previous socket file is replaced. */
export async function listenOnSocket(p: DaemonPaths, onConnection: (c: Socket) => void, log: (message: string) => void): Promise<{ server: Server; token: Buffer }> {
  if (Buffer.byteLength(p.socket) > 107) throw new LayerFsError('ERR_INVALID_ARGUMENT', `the daemon socket path is too long for a Unix socket: ${p.socket}`, { path: p.socket, hint: 'use a shorter Store path' });
  try {
    unlinkSync(p.socket);
  } catch {
    /* none */
  }
  const token = randomBytes(32);
  const tmp = `${p.token}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeFileSync(fd, token.toString('hex'));
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, p.token);
  const server = createServer({ allowHalfOpen: true }, onConnection);
  const oldMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p.socket, () => resolve());
    });
  } finally {
    process.umask(oldMask);
  }
  chmodSync(p.socket, 0o600);
  server.on('error', (e) => log(`socket error: ${e.message}`));
  return { server, token };
}

/**
 * One client connection. Answers go out in request order, and the connection closes once the
 * client has ended and all are sent. Backpressure: at most MAX_IN_FLIGHT requests are taken
 * in at a time, and reading stops while the answers the client has not read pass
 * MAX_UNREAD_ANSWERS bytes, so a client that sends without reading holds a bounded amount of
 * the daemon's memory (its unread requests wait in the kernel's socket buffer).
 */
export function serveConnection(c: Socket, answer: (line: string) => Promise<Response>, conns: Set<Socket>, progress: () => number = () => 0): void {
  let buf = '';
  let pending = 0;
  let ended = false;
  let chain: Promise<void> = Promise.resolve();
  let told = progress();
  const beat = setInterval(() => {
    const now = progress();
    if (pending === 0 || now === told || c.destroyed) return;
    told = now;
    c.write(`{"progress":${now}}\n`);
  }, HEARTBEAT_MS);
  beat.unref();
  const maybeEnd = () => {
    if (ended && pending === 0 && buf.indexOf('\n') < 0 && !c.destroyed) c.end();
  };
  const full = () => pending >= MAX_IN_FLIGHT || c.writableLength > MAX_UNREAD_ANSWERS;
  const pump = () => {
    let nl: number;
    while (!full() && !c.destroyed && (nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      pending++;
      const answered = answer(line);
      chain = chain.then(async () => {
        const r = await answered;
        if (!c.destroyed) c.write(JSON.stringify(r) + '\n');
        pending--;
        pump();
        maybeEnd();
      });
    }
    if (full() || buf.indexOf('\n') >= 0) c.pause();
    else if (!ended) c.resume();
  };
  conns.add(c);
  c.on('close', () => {
    conns.delete(c);
    clearInterval(beat);
  });
  c.on('drain', pump);
  c.setEncoding('utf8');
  c.on('error', () => {});
  c.on('end', () => {
    ended = true;
    maybeEnd();
  });
  c.on('data', (chunk: string) => {
    buf += chunk;
    if (buf.length > MAX_LINE && !buf.slice(0, MAX_LINE).includes('\n')) {
      c.end(JSON.stringify({ ok: false, error: { code: 'ERR_INVALID_ARGUMENT', message: `request line longer than ${MAX_LINE} bytes` } }) + '\n');
      c.destroy();
      return;
    }
    pump();
  });
}
