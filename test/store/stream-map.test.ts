// A streamed read of a large file maps the Store file while it runs (lib/store/stream-map.ts):
// mapped from its first piece until the last stream ends (also one abandoned early), never for a
// small file nor on a connection that asked not to (the mount daemon's); at most a window of its
// pages resident at once; and the same bytes while another connection deletes, rewrites and
// VACUUMs the file smaller between its pieces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAP_WINDOW_BYTES, STREAM_MAP_BYTES } from '../../lib/store/stream-map.js';
import { importTree, Store } from '../../lib/store/index.js';
import { MAPPED_BYTES } from '../../lib/store/store-file.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const MIB = 1024 * 1024;

async function imported(store: Store, dir: string, files: Record<string, Buffer>): Promise<Buffer> {
  mkdirSync(dir);
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  return store.write(async (w) => (await importTree(dir, w, store.pages, { forbidden: store.files })).rootId);
}

const mapSize = (s: Store): number => s.db.pragma('mmap_size', { simple: true }) as number;

function stream(store: Store, root: Buffer, name: string): Generator<Buffer> {
  const view = store.view(root);
  return view.content(view.resolve([Buffer.from(name)], name).inode);
}

/** The rest of a stream, joined after the pieces already taken. */
function rest(taken: Buffer[], it: Generator<Buffer>): Buffer {
  for (let r = it.next(); !r.done; r = it.next()) taken.push(Buffer.from(r.value));
  return Buffer.concat(taken);
}

test('a large streamed read maps the Store file from its first piece until the last stream ends', async () => {
  const dir = tempDir();
  const path = join(dir, 's.layerfs');
  const big = seededBytes(0x3a9, STREAM_MAP_BYTES + 2 * MIB + 777);
  const other = seededBytes(0x3aa, STREAM_MAP_BYTES + 12345);
  const small = seededBytes(0x3ab, STREAM_MAP_BYTES - 1);
  const store = Store.create(path);
  const root = await imported(store, join(dir, 'src'), { big, other, small });
  try {
    assert.equal(mapSize(store), 0, 'not mapped before any read');
    const a = stream(store, root, 'big');
    const aTaken = [Buffer.from(a.next().value as Buffer)];
    assert.equal(mapSize(store), MAPPED_BYTES, 'mapped during a large read');
    const b = stream(store, root, 'other');
    const bTaken = [Buffer.from(b.next().value as Buffer)];
    assert.ok(rest(aTaken, a).equals(big));
    assert.equal(mapSize(store), MAPPED_BYTES, 'still mapped while the second stream runs');
    assert.ok(rest(bTaken, b).equals(other));
    assert.equal(mapSize(store), 0, 'the map goes when the last stream ends');

    // Abandoned after one piece (a consumer's `break`): the map goes with it.
    for (const piece of stream(store, root, 'big')) {
      assert.ok(piece.length > 0);
      assert.equal(mapSize(store), MAPPED_BYTES);
      break;
    }
    assert.equal(mapSize(store), 0, 'an abandoned stream unmaps');

    // A file below the threshold is read with pread(2).
    const s = stream(store, root, 'small');
    const sTaken = [Buffer.from(s.next().value as Buffer)];
    assert.equal(mapSize(store), 0, 'a small file does not map');
    assert.ok(rest(sTaken, s).equals(small));
  } finally {
    store.close();
  }

  // A connection that asked not to (the mount daemon's) never maps.
  const bounded = Store.open(path, { mapStreams: false });
  try {
    const it = stream(bounded, root, 'big');
    const taken = [Buffer.from(it.next().value as Buffer)];
    assert.equal(mapSize(bounded), 0);
    assert.ok(rest(taken, it).equals(big));
  } finally {
    bounded.close();
  }
  assertStoreIntact(path);
});

test('a mapped stream reads the same bytes while another connection shrinks the Store file between its pieces', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const path = join(dir, 's.layerfs');
  const writer = Store.create(path);
  // The junk is written first, so the kept file's pages move down when it goes.
  await imported(writer, join(dir, 'junk'), { junk: seededBytes(0x3ac, 24 * MIB) });
  const big = seededBytes(0x3ad, STREAM_MAP_BYTES + 5 * MIB + 99);
  const root = await imported(writer, join(dir, 'src'), { big });
  const reader = Store.open(path);
  try {
    const it = stream(reader, root, 'big');
    const taken = [Buffer.from(it.next().value as Buffer)];
    assert.equal(mapSize(reader), MAPPED_BYTES);
    const before = statSync(path).size;
    await writer.gc({ roots: () => [{ kind: 'layer', id: 'kept', rootId: root }], vacuum: true });
    writer.db.pragma('wal_checkpoint(TRUNCATE)');
    const after = statSync(path).size;
    assert.ok(after < before - 16 * MIB, `the file shrank: ${before} → ${after} bytes`);
    assert.ok(rest(taken, it).equals(big), 'the rest of the stream after the file shrank');
    assert.equal(mapSize(reader), 0);
    // A new stream maps the smaller file and reads it whole.
    assert.ok(Buffer.concat([...stream(reader, root, 'big')]).equals(big));
  } finally {
    reader.close();
    writer.close();
  }
  assertStoreIntact(path);
});

/** Resident bytes of this process's maps of `file` (/proc/self/smaps). */
function residentOf(file: string): number {
  let bytes = 0;
  let ours = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) ours = line.endsWith(` ${file}`);
    else if (ours && line.startsWith('Rss:')) bytes += Number(/(\d+) kB/.exec(line)![1]) * 1024;
  }
  return bytes;
}

test('a mapped stream keeps at most a window of the Store file resident', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const path = join(dir, 's.layerfs');
  const store = Store.create(path);
  const big = seededBytes(0x3ae, 3 * MAP_WINDOW_BYTES + 5 * MIB);
  const root = await imported(store, join(dir, 'src'), { big });
  try {
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    const file = store.path;
    let most = 0;
    let read = 0;
    const taken: Buffer[] = [];
    for (const piece of stream(store, root, 'big')) {
      taken.push(Buffer.from(piece));
      read += piece.length;
      most = Math.max(most, residentOf(file));
    }
    assert.ok(Buffer.concat(taken).equals(big));
    assert.ok(read > 2 * MAP_WINDOW_BYTES && most > 0, `the stream was mapped (${most} bytes resident at most)`);
    // A window, the piece read past it, and the pages the kernel maps around a fault.
    assert.ok(most <= MAP_WINDOW_BYTES + 8 * MIB, `at most ${most} bytes of the Store file resident (window ${MAP_WINDOW_BYTES})`);
    assert.equal(residentOf(file), 0, 'nothing mapped after the read');
  } finally {
    store.close();
  }
  assertStoreIntact(path);
});
