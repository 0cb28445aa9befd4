/** Entry point of the mount daemon process: `node daemon-main.js <store path>` (started by client.ts). */
import { runDaemon } from './daemon.js';

const storePath = process.argv[2];
if (!storePath) {
  process.stderr.write('usage: daemon-main <store path>\n');
  process.exitCode = 2;
} else {
  void runDaemon(storePath);
}
