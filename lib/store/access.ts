/**
 * What Store maintenance (gc, repack) needs of a Store handle. The Store class calls gc and repack
 * and they take this instead of the class, so neither imports the handle and no cycle forms.
 */
import type { ObjectReader } from './objects.js';
import type { Db } from './store-file.js';

export interface StoreAccess {
  readonly db: Db;
  readonly path: string;
  readonly objects: ObjectReader;
  /** A consistent read snapshot across several statements. */
  read<T>(fn: () => T): T;
}
