// Entry used when running the CLI from sources (tests, development): node --import tsx lib/cli/bin.ts
import { main } from './start.js';

await main(process.argv);
