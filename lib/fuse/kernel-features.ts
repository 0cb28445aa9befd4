/**
 * The FUSE kernel features the kernel backend asks for at INIT, each of which can be turned off
 * (to measure it, or where a kernel misbehaves with it) through $LAYERFS_FUSE_FEATURES: a comma
 * list of `-name` (off) and `+name` (on), e.g. `-readdirplus,+writeback`. A kernel that lacks a
 * feature simply does not grant it, and the server then runs as with it off.
 *
 *   readdirplus  READDIRPLUS (auto): a listing carries each entry's attributes, so `ls -l`,
 *                `find`, rsync walks need no LOOKUP per name
 *   maxpages     requests of up to 1 MiB (max_pages 256); off: the kernel's 128 KiB
 *   writeback    the kernel's writeback cache: write(2) returns once the bytes are in the page
 *                cache and the kernel sends them later, in large WRITEs. The daemon then flushes
 *                the mount (syncfs) before a commit or a status, so both still see every byte a
 *                returned write(2) wrote (kernel-flush.ts)
 *   passthrough  FUSE passthrough: the kernel reads a file whose content sits whole in a spool
 *                file itself, for read-only opens (kernel-passthrough.ts; root daemons, Linux
 *                6.9+, not with writeback). While such opens live, writers of that file get ETXTBSY
 *   directwrite  write-only opens get FOPEN_DIRECT_IO: each WRITE carries the writer's own pages
 *                (pinned), not a copy in the mount's page cache; the kernel drops cached pages of
 *                the written range first. Not with writeback (on by default: docs/DECISIONS.md)
 */
import { LayerFsError } from '../errors.js';

export const FEATURES_ENV = 'LAYERFS_FUSE_FEATURES';

export type KernelFeature = 'readdirplus' | 'maxpages' | 'writeback' | 'passthrough' | 'directwrite';

export type KernelFeatures = Record<KernelFeature, boolean>;

/** What the backend asks for when $LAYERFS_FUSE_FEATURES says nothing (docs/DECISIONS.md says why). */
export const DEFAULT_FEATURES: Readonly<KernelFeatures> = { readdirplus: true, maxpages: true, writeback: false, passthrough: false, directwrite: true };

/** The features asked for: the defaults, changed by `spec` (default $LAYERFS_FUSE_FEATURES). */
export function kernelFeatures(spec: string | undefined = process.env[FEATURES_ENV]): KernelFeatures {
  const out = { ...DEFAULT_FEATURES };
  for (const raw of (spec ?? '').split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const on = !item.startsWith('-');
    const name = item.replace(/^[+-]/, '');
    if (!(name in out)) {
      throw new LayerFsError('ERR_INVALID_ARGUMENT', `unknown FUSE feature ${JSON.stringify(name)} in ${FEATURES_ENV}`, {
        name,
        hint: `use a comma list of -name or +name, names: ${Object.keys(DEFAULT_FEATURES).join(', ')}`,
      });
    }
    out[name as KernelFeature] = on;
  }
  return out;
}
