/** Entry point of the mount daemon process: `node daemon-main.js <store path>` (started by client.ts). */
import { applyGlibcBudget } from './budget.js';
import { prepareServingWorker } from './kernel-spare.js';

const storePath = process.argv[2];
if (!storePath) {
  process.stderr.write('usage: daemon-main <store path>\n');
  process.exitCode = 2;
} else {
  // Before any thread starts: the daemon's memory budget (budget.ts).
  applyGlibcBudget();
  // The first mount's serving thread loads while this thread loads the daemon (kernel-spare.ts).
  prepareServingWorker(storePath);
  const { runDaemon } = await import('./daemon.js');
  void runDaemon(storePath);
}
