#!/bin/bash
# Materialize, export and `workspace end` of the real tree A against `cp -a` and `rm -rf`, for
# one or two checkouts (the code before and after a change) on one Store, interleaved:
#   A=TREE D=SCRATCH bench/micro/real-tree-ab.sh FIRST LAST ROOT [ROOT2]   → one line per round
# Per round: the creations (cp -a, then each checkout's create and export; checkout order and op
# order rotated by round), then the removals (rm -rf of the copy, each checkout's end); `sync`
# before every timed step (no writeback backlog from the step before), exports moved aside (not
# removed) into $D/trash, then 35 s quiet: ext4 without a journal skips inodes freed in the last
# 30 s when it allocates, and creating files right after a large removal costs several times more.
# Each operation is its own process (bench/micro/real-tree-op.ts): "op=wall ms/CPU ms".
FIRST=$1; N=$2; shift 2; LIBS=("$@")
A=${A:?the real tree A (bench/fixtures: ~/.cache/layerfs-bench/real-tree-a-*/tree)}; D=${D:?a scratch directory}; S=$D/a.sqlite
cd "$(dirname "$0")/../.."
[ -f $S ] || node --import tsx bench/micro/real-tree-op.ts . $S import $A
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
run() { sync; local j; j=$(node --import tsx bench/micro/real-tree-op.ts "$@"); echo $j | sed 's/.*"ms":\([0-9]*\),"cpuMs":\([0-9]*\).*/\1\/\2/'; }
mkdir -p $D/trash
for r in $(seq $FIRST $N); do
  line="round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  sync; t=$(date +%s%N); cp -a $A $D/cp; line="$line cp=$(ms $t)"
  idx=(0 1); (( r % 2 == 0 )) && idx=(1 0)
  for k in "${idx[@]}"; do L=${LIBS[$k]}; [ -z "$L" ] && continue
    if (( r % 2 == 0 )); then order="create export"; else order="export create"; fi
    for op in $order; do
      tgt=$D/ws-$k; [ $op = export ] && tgt=$D/exp-$k
      line="$line $op$k=$(run $L $S $op $tgt)"
    done
  done
  sync; t=$(date +%s%N); rm -rf $D/cp; line="$line rm=$(ms $t)"
  for k in "${idx[@]}"; do L=${LIBS[$k]}; [ -z "$L" ] && continue
    line="$line end$k=$(run $L $S end $D/ws-$k)"
  done
  for k in "${idx[@]}"; do mv $D/exp-$k $D/trash/exp-$r-$k; done
  echo "$line load $(cut -d' ' -f1 /proc/loadavg) $(date -u +%H:%M:%S)"
  sync; sleep 35
done
