import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from './lib/sdk/index.js';
const store = process.argv[2]!; const at = process.argv[3]!;
const c = Client.connect(store);
const ws = await c.createWorkspace('main', { at, projection: 'fuse' });
const dev = fs.readFileSync('/proc/self/mountinfo','utf8').split('\n').find(l => l.split(' ')[4] === at)!.split(' ')[2]!;
const py = (...a: string[]) => spawnSync('sh', ['-c', `python3 -c 'import os,sys,time,subprocess
for p in sys.argv[1:]:
  fd=os.open(p,os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)
t=time.perf_counter()
for c in [subprocess.Popen(["dd","if="+p,"of=/dev/null","bs=1M","status=none"]) for p in sys.argv[1:]]: c.wait()
print(time.perf_counter()-t)' ${a.join(' ')}`], { encoding: 'utf8' }).stdout.trim();
const A = path.join(at, 'a.bin'), B = path.join(at, 'b.bin');
py(A);
const pid = (await c.daemonStatus())!.pid;
const cpu = () => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
for (const ra of ['1024', '1024']) {
  let c0 = cpu(); py(A); py(A); py(A); const cOne = (cpu() - c0) / 192;
  c0 = cpu(); py(A, B); py(A, B); py(A, B); const cTwo = (cpu() - c0) / 384;
  console.log(`daemon cpu ms per MiB: one ${cOne.toFixed(2)}, two ${cTwo.toFixed(2)}`);
  const one = [py(A), py(A), py(A)].map(Number).sort()[1]!;
  const two = [py(A, B), py(A, B), py(A, B)].map(Number).sort()[1]!;
  console.log(`ra ${ra}: one ${(64/one).toFixed(0)} MiB/s, two ${(128/two).toFixed(0)} MiB/s`, fs.readFileSync('/proc/loadavg','utf8').split(' ')[0]);
}
await c.endWorkspace(ws.id, { discard: true }); await c.stopDaemon({ discard: true }); c.close();
