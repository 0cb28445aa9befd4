import assert from 'node:assert/strict';
import type { Client } from '../../lib/sdk/index.js';

/** The Store integrity check every mutating test ends with. */
export function assertIntact(client: Client): void {
  const r = client.verify();
  assert.equal(r.sqliteCheck, 'ok');
  assert.deepEqual(r.damaged, []);
  assert.ok(r.ok);
}
