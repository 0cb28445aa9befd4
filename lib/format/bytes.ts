/**
 * Canonical binary encoding used by every stored object. Integers are unsigned LEB128 varints
 * (one encoding per value, so equal content gives equal bytes and equal ids) or fixed-width
 * big-endian where ordering matters (serial keys sort as bytes).
 */
import { LayerFsError } from '../errors.js';

export class ByteWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v;
    return this;
  }

  /** Varint for non-negative integers up to 2^53. */
  uv(v: number): this {
    this.ensure(10);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
    return this;
  }

  /** Varint for bigints (nanosecond times). Signed values are zig-zag encoded. */
  sv64(v: bigint): this {
    let z = v >= 0n ? v << 1n : ((-v) << 1n) - 1n;
    this.ensure(11);
    if (z <= 0xffffffffffffffffn) {
      // Up to 64 bits (every time value): the same bytes from two 32-bit halves held as numbers,
      // without the bigints each step of the loop below allocates (an import encodes one per entry).
      let lo = Number(z & 0xffffffffn);
      let hi = Number(z >> 32n);
      while (hi !== 0 || lo >= 0x80) {
        this.buf[this.pos++] = (lo & 0x7f) | 0x80;
        lo = ((lo >>> 7) | ((hi & 0x7f) << 25)) >>> 0;
        hi >>>= 7;
      }
      this.buf[this.pos++] = lo;
      return this;
    }
    while (z >= 0x80n) {
      this.buf[this.pos++] = Number(z & 0x7fn) | 0x80;
      z >>= 7n;
    }
    this.buf[this.pos++] = Number(z);
    return this;
  }

  bytes(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  /** Length-prefixed bytes. */
  lbytes(b: Uint8Array): this {
    return this.uv(b.length).bytes(b);
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

export class ByteReader {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly what: string,
  ) {}

  private fail(msg: string): never {
    throw new LayerFsError('ERR_CORRUPT', `malformed ${this.what}: ${msg}`);
  }

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  u8(): number {
    if (this.pos >= this.buf.length) this.fail('truncated');
    return this.buf[this.pos++]!;
  }

  uv(): number {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = this.u8();
      v += (b & 0x7f) * mul;
      if (b < 0x80) break;
      mul *= 0x80;
      if (mul > 2 ** 56) this.fail('varint too long');
    }
    return v;
  }

  sv64(): bigint {
    let z = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.u8();
      z |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7n;
      if (shift > 70n) this.fail('varint too long');
    }
    return z & 1n ? -((z + 1n) >> 1n) : z >> 1n;
  }

  /**
   * A count of entries that each take at least `minBytes`: refused when the remaining bytes
   * cannot hold that many, so damaged input cannot make a decoder allocate a huge array.
   */
  count(minBytes: number): number {
    const n = this.uv();
    if (n * minBytes > this.buf.length - this.pos) this.fail(`count ${n} exceeds the remaining bytes`);
    return n;
  }

  bytes(n: number): Buffer {
    if (this.pos + n > this.buf.length) this.fail('truncated');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  lbytes(): Buffer {
    return this.bytes(this.uv());
  }

  end(): void {
    if (this.pos !== this.buf.length) this.fail('trailing bytes');
  }
}
