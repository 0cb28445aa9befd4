/**
 * Content-addressed object storage. An ObjectId is BLAKE3(domain tag ‖ 0x00 ‖ canonical bytes);
 * the kind column names the domain, so every read re-hashes and authenticates what it returns.
 * Ids and kinds: object-id.ts; writing (groups, rows, deltas): object-writer.ts; reading:
 * object-reader.ts.
 */
export { Codec } from './codec.js';
export { deltaBases, DOMAIN_TAGS, emptyWriteStats, idOf, ObjectKind, type Locator, type WriteStats } from './object-id.js';
export { ObjectWriter } from './object-writer.js';
export { ObjectReader } from './object-reader.js';
