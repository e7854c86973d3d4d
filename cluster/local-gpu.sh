#!/usr/bin/env bash
# Start a dask-cuda cluster: scheduler on this node, one worker per GPU on each node given.
#
#   cluster/local-gpu.sh                      # scheduler + workers on this node
#   cluster/local-gpu.sh node2 node3          # + workers on node2, node3 (ssh, shared FS)
#   datamask select IN OUT --device gpu --scheduler-file "$SCHED_FILE"
#
# Needs the [gpu] environment (environment.yml) on every node, and SCHED_FILE on a
# filesystem every node sees. Stop with: kill $(cat "$SCHED_FILE.pids")
set -euo pipefail
SCHED_FILE=${SCHED_FILE:-$HOME/.datamask/scheduler.json}
MEMORY=${MEMORY:-auto}            # host memory limit per worker
RMM_POOL=${RMM_POOL:-0.8}         # fraction of each GPU given to an RMM pool
INTERFACE=${INTERFACE:-}          # e.g. ib0 for InfiniBand; empty: default route
mkdir -p "$(dirname "$SCHED_FILE")"
rm -f "$SCHED_FILE"
iface=${INTERFACE:+--interface $INTERFACE}

dask scheduler --scheduler-file "$SCHED_FILE" $iface --dashboard-address :8787 &
echo $! > "$SCHED_FILE.pids"
for _ in $(seq 60); do [ -s "$SCHED_FILE" ] && break; sleep 1; done

worker="dask cuda worker --scheduler-file $SCHED_FILE --memory-limit $MEMORY --rmm-pool-size $RMM_POOL $iface"
$worker &
echo $! >> "$SCHED_FILE.pids"
for node in "$@"; do
  ssh "$node" "cd $(pwd) && nohup $worker > /tmp/dask-cuda-worker.log 2>&1 &"
done
echo "scheduler file: $SCHED_FILE"
wait
