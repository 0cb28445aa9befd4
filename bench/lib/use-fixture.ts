// Every family records the fixture it used in the results (and says when it had to generate it).

import type { CachedFixture } from '../fixtures/cache.js';
import type { RunContext } from './types.js';

/** Notes `fx` in the run's results, logs its generation time if it was just made, returns it. */
export function useFixture(ctx: RunContext, fx: CachedFixture): CachedFixture {
  ctx.noteFixture({ name: fx.manifest.name, dir: fx.dir, reused: fx.reused, manifest: fx.manifest });
  if (!fx.reused) ctx.log(`  generated ${fx.manifest.name} in ${(fx.manifest.generateMs / 1000).toFixed(1)} s`);
  return fx;
}
