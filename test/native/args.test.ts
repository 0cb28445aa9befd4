import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLayerFsError } from '../../lib/errors.js';
import {
  blake3,
  Blake3Hasher,
  chunkAndHash,
  Chunker,
  chunkLengths,
  getXattrs,
  hashBuffers,
  objectId,
  scanPaths,
  setXattr,
} from '../../lib/native/index.js';

/** Asserts ERR_INVALID_ARGUMENT naming `argument` (a prefix match: 'params' matches 'params.minSize'). */
function invalid(argument: string): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(isLayerFsError(e, 'ERR_INVALID_ARGUMENT'), `expected ERR_INVALID_ARGUMENT, got ${String(e)}`);
    assert.ok(String(e.details.argument).startsWith(argument), `argument ${String(e.details.argument)} vs ${argument}`);
    return true;
  };
}

const anyFn = <T>(f: T): ((...args: unknown[]) => unknown) => f as unknown as (...args: unknown[]) => unknown;

describe('argument checks', () => {
  test('non-byte inputs', () => {
    for (const bad of ['str', 42, null, undefined, [1, 2], {}, new Uint16Array(4), new ArrayBuffer(4)]) {
      assert.throws(() => anyFn(blake3)(bad), invalid('data'));
      assert.throws(() => anyFn(chunkLengths)(bad), invalid('data'));
      assert.throws(() => anyFn(chunkAndHash)(bad), invalid('data'));
      assert.throws(() => anyFn(objectId)('tag', Buffer.alloc(1), bad), invalid('parts[1]'));
      assert.throws(() => new Blake3Hasher().update(bad as Uint8Array), invalid('data'));
      assert.throws(() => new Chunker().push(bad as Uint8Array), invalid('data'));
    }
    assert.throws(() => anyFn(objectId)(5, Buffer.alloc(1)), invalid('domainTag'));
    assert.throws(() => anyFn(chunkAndHash)(Buffer.alloc(1), undefined, 7), invalid('domainTag'));
    assert.throws(() => new Blake3Hasher().digest(0), invalid('length'));
    assert.throws(() => new Blake3Hasher().digest(1.5), invalid('length'));
  });

  test('bad chunker params name the field', () => {
    const cases: [unknown, string][] = [
      [{ minSize: 20000, avgSize: 16384, maxSize: 32768 }, 'params.minSize'],
      [{ minSize: 16384, avgSize: 16384, maxSize: 32768 }, 'params.minSize'],
      [{ minSize: 4096, avgSize: 16384, maxSize: 8192 }, 'params.maxSize'],
      [{ minSize: 4096, avgSize: 16384, maxSize: 16384 }, 'params.maxSize'],
      [{ minSize: 0, avgSize: 16384, maxSize: 32768 }, 'params.minSize'],
      [{ minSize: 32, avgSize: 16384, maxSize: 32768 }, 'params.minSize'],
      [{ minSize: 8192.5, avgSize: 16384, maxSize: 32768 }, 'params.minSize'],
      [{ minSize: 8192, avgSize: 12000, maxSize: 32768 }, 'params.avgSize'],
      [{ minSize: 8192, avgSize: '16384', maxSize: 32768 }, 'params.avgSize'],
      [{ minSize: 8192, avgSize: 16384, maxSize: 64 * 1024 * 1024 }, 'params.maxSize'],
      [{ minSize: 8192, avgSize: 16384, maxSize: Number.NaN }, 'params.maxSize'],
      [{ normalization: 4 }, 'params.normalization'],
      [{ normalization: -1 }, 'params.normalization'],
      [{ avgSize: 65536 }, 'params.maxSize'],
      ['fast', 'params'],
      [null, 'params'],
    ];
    for (const [params, argument] of cases) {
      assert.throws(() => anyFn(chunkLengths)(Buffer.alloc(10), params), invalid(argument), JSON.stringify(params));
      assert.throws(() => new Chunker(params as never), invalid(argument));
      assert.throws(() => anyFn(chunkAndHash)(Buffer.alloc(10), params), invalid(argument));
    }
    assert.deepEqual(chunkLengths(Buffer.alloc(10), { minSize: 64, avgSize: 128, maxSize: 129 }), [10]);
  });

  test('batch calls reject bad arguments without starting work', async () => {
    await assert.rejects(hashBuffers('x' as never), invalid('buffers'));
    await assert.rejects(hashBuffers([Buffer.alloc(1), 'x' as never]), invalid('buffers[1]'));
    await assert.rejects(hashBuffers([], { threads: 0 }), invalid('options.threads'));
    await assert.rejects(hashBuffers([], { threads: 65 }), invalid('options.threads'));
    await assert.rejects(hashBuffers([], { threads: 1.5 }), invalid('options.threads'));
    await assert.rejects(hashBuffers([], { smallFileThreshold: -1 }), invalid('options.smallFileThreshold'));
    await assert.rejects(hashBuffers([], { params: { minSize: 1, avgSize: 2, maxSize: 3 } }), invalid('options.params.minSize'));
    await assert.rejects(hashBuffers([], 5 as never), invalid('options'));
    await assert.rejects(scanPaths('/etc' as never), invalid('paths'));
    await assert.rejects(scanPaths([5 as never]), invalid('paths[0]'));
    await assert.rejects(scanPaths(['']), invalid('paths[0]'));
    await assert.rejects(scanPaths(['/etc/pa\0sswd']), invalid('paths[0]'));
    await assert.rejects(scanPaths([Buffer.from('/tmp\0x')]), invalid('paths[0]'));
    await assert.rejects(scanPaths(['/etc'], { retries: -1 }), invalid('options.retries'));
    await assert.rejects(scanPaths(['/etc'], { readData: 'yes' as never }), invalid('options.readData'));
    await assert.rejects(scanPaths(['/etc'], { xattrs: 1 as never }), invalid('options.xattrs'));
    await assert.rejects(scanPaths(['/etc'], { maxDataSize: -1 }), invalid('options.maxDataSize'));
    await assert.rejects(scanPaths(['/etc'], { maxDataSize: 1.5 }), invalid('options.maxDataSize'));
    await assert.rejects(scanPaths(['/etc'], { digestOversize: 'no' as never }), invalid('options.digestOversize'));
    await assert.rejects(scanPaths(['/etc'], { maxBatchData: -5 }), invalid('options.maxBatchData'));
  });

  test('xattr helpers check arguments', () => {
    assert.throws(() => setXattr('', 'user.a', 'v'), invalid('path'));
    assert.throws(() => anyFn(setXattr)('/tmp', 5, 'v'), invalid('name'));
    assert.throws(() => anyFn(setXattr)('/tmp', 'user.a', 5), invalid('value'));
    assert.throws(() => anyFn(getXattrs)(undefined), invalid('path'));
  });

  test('the raw addon survives wrong calls (errors, not crashes)', async () => {
    const { native } = await import('../../lib/native/binding.js');
    const raw = native as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const name of ['blake3', 'chunkLengths', 'chunkAndHash', 'objectIdInto', 'getXattrs', 'setXattr']) {
      assert.throws(() => raw[name]!(), `${name}()`);
      assert.throws(() => raw[name]!(1, 2, 3), `${name}(1,2,3)`);
    }
    assert.throws(() => raw.blake3!(Buffer.alloc(1), Buffer.alloc(31)));
    assert.throws(() => raw.objectIdInto!(Buffer.alloc(32), 'tag', 'not bytes'));
    assert.throws(() => raw.hashBuffers!([Buffer.alloc(1)], {}));
    assert.throws(() => raw.scanPaths!([Buffer.alloc(1)], { threads: 2 }));
    assert.throws(() => raw.chunkLengths!(Buffer.alloc(1), { minSize: 1, avgSize: 2, maxSize: 3, normalization: 0 }));
  });
});
