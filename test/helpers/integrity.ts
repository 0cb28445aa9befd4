import assert from 'node:assert/strict';
import { Client } from '../../lib/sdk/index.js';

/** The Store integrity check every mutating test ends with. */
export function assertIntact(client: Client): void {
  const r = client.verify();
  assert.equal(r.sqliteCheck, 'ok');
  assert.deepEqual(r.damaged, []);
  assert.ok(r.ok);
}

/** assertIntact on a Store by path, through a read-only connection of its own. */
export function assertStoreIntact(path: string): void {
  const c = Client.connect(path, { readonly: true });
  try {
    assertIntact(c);
  } finally {
    c.close();
  }
}
