// Two identical Stores for an A/B of two checkouts: one import of `source` as Layer Stack `p`
// with Branch `main`, then a byte copy, so both sides start from the same pages.
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '../../lib/sdk/index.js';

export async function twinStores(dir: string, source: string): Promise<[string, string]> {
  const stores: [string, string] = [path.join(dir, 'a.sqlite'), path.join(dir, 'b.sqlite')];
  const init = Client.create(stores[0]);
  const layer = (await init.initLayerStack({ name: 'p', source })).layer.id;
  init.forkBranch({ name: 'main', layer });
  await init.close();
  fs.copyFileSync(stores[0], stores[1]);
  return stores;
}
