// The part of fuse-native 2.2.6 (CommonJS, untyped) that lib/fuse/fuse.ts uses.
declare module 'fuse-native' {
  type Cb = (code: number, ...values: unknown[]) => void;

  interface FuseOptions {
    timeout?: number | false;
    force?: boolean;
    mkdir?: boolean;
    debug?: boolean;
    [option: string]: unknown;
  }

  class Fuse {
    constructor(mnt: string, ops: Record<string, (...args: any[]) => void>, opts?: FuseOptions);
    readonly mnt: string;
    mount(cb: (err: Error | null) => void): void;
    unmount(cb: (err: Error | null) => void): void;
    static unmount(mnt: string, cb: (err: Error | null) => void): void;
    _fuseOptions(): string;
    _op_fgetattr(signal: Cb, path: string, fd: number): void;
    _op_getxattr(signal: Cb, path: string, name: string, valueBuf: Buffer, position: number): void;
    _op_listxattr(signal: Cb, path: string, listBuf: Buffer): void;
    _op_readdir(signal: Cb, path: string): void;
    _op_utimens(signal: Cb, path: string, atimeLow: number, atimeHigh: number, mtimeLow: number, mtimeHigh: number): void;
    /** The per-thread request records (fuse_thread_locals_t) fuse-native allocated. */
    readonly _threads: Set<Buffer>;
  }

  export = Fuse;
}
