#!/bin/bash
# Peak memory and CPU of a materialized `layerfs workspace commit` of release B over release A,
# for one or two checkouts (the code before and after a change) from one saved Store, alternated,
# with `git add -A && git commit` of the same change in the same rounds:
#   D=SCRATCH bench/micro/commit-memory.sh setup A_TREE B_TREE         → D/{snap,ws} and D/git
#   D=SCRATCH bench/micro/commit-memory.sh run ROUNDS ROOT [ROOT2]     → one line per commit
# setup imports A with this checkout's SDK, materializes it in D/ws and rsyncs B over it; the
# Store file is saved in D/snap and restored before every commit (so every run commits the same
# change from the same Store). The git repository (D/git/work) holds A committed with B rsynced
# over it; its .git is restored before every run the same way. Each commit is the compiled CLI
# of its checkout (ROOT/bin/layerfs.js, dist/ built) under /usr/bin/time -v: wall, CPU (user +
# system) and the maximum resident set. "stored" is the sum of the pack rows after the commit.
# Checkout order alternates by round; the load (1 min) before and after each run is printed.
set -e
D=${D:?a scratch directory}; cmd=$1; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
load() { cut -d' ' -f1 /proc/loadavg; }
field() { grep "$1" $D/time.txt | awk '{print $NF}'; }
timed() { # label: prints wall, CPU and peak of the run /usr/bin/time just recorded
  local cpu; cpu=$(echo "$(field 'User time') + $(field 'System time')" | bc)
  echo "$1 wall=$(field Elapsed) cpu=${cpu}s peak=$(( $(field 'Maximum resident') / 1024 ))MiB"
}
if [ "$cmd" = setup ]; then
  A=$1; B=$2; mkdir -p $D
  (cd $here && node --import tsx -e "
    const { Client } = await import('./lib/sdk/index.ts');
    const c = Client.create('$D/s.sqlite');
    const r = await c.initLayerStack({ name: 'real', source: '$A' });
    c.forkBranch({ name: 'main', layer: r.layer.id });
    await c.createWorkspace('main', { at: '$D/ws', projection: 'materialize' });
    c.close();")
  rsync -a --delete $B/ $D/ws/
  mkdir -p $D/snap && cp -a $D/s.sqlite $D/s.sqlite.d $D/snap/
  mkdir -p $D/git/work && cp -a $A/. $D/git/work/
  (cd $D/git/work && git init -q && git -c gc.auto=0 add -A && git -c gc.auto=0 -c user.name=a -c user.email=a@a commit -q -m A &&
    rsync -a --delete --exclude=.git $B/ ./ && cp -a .git ../gitsnap)
  echo "setup done: $D"
  exit 0
fi
[ "$cmd" = run ] || { echo "usage: commit-memory.sh setup A B | run ROUNDS ROOT [ROOT2]" >&2; exit 2; }
N=$1; shift; ROOTS=("$@")
commit() { # ROOT
  rm -rf $D/s.sqlite*; cp -a $D/snap/. $D/; sync
  local l0; l0=$(load)
  (cd $D/ws && /usr/bin/time -v -o $D/time.txt node $1/bin/layerfs.js --store $D/s.sqlite workspace commit -m B > $D/out.txt 2> $D/err.txt) || { echo "$1: commit failed"; cat $D/err.txt; return 1; }
  local stored; stored=$(node -e "const D=require('$here/node_modules/better-sqlite3');console.log(new D('$D/s.sqlite',{readonly:true}).prepare('select sum(length(data)) s from packs').get().s)")
  echo "$(timed "$1") stored=${stored}B load=$l0-$(load)"
}
gitcommit() {
  rm -rf $D/git/work/.git; cp -a $D/git/gitsnap $D/git/work/.git; sync
  local l0; l0=$(load)
  (cd $D/git/work && /usr/bin/time -v -o $D/time.txt sh -c 'git -c gc.auto=0 add -A && git -c gc.auto=0 -c user.name=b -c user.email=b@b commit -q -m B')
  echo "$(timed git) load=$l0-$(load)"
}
for r in $(seq 1 $N); do
  echo "round $r $(date -u +%H:%M:%S)"
  idx=(0 1); (( r % 2 == 0 )) && idx=(1 0)
  for k in "${idx[@]}"; do [ -n "${ROOTS[$k]}" ] && commit "${ROOTS[$k]}"; done
  [ -d $D/git/gitsnap ] && gitcommit
done
