#!/bin/bash
# gate.sh AIRLOCK_BIN BENCH_BIN NAME PORT [perf]: `airlock serve` on a fresh SQLite data dir
# with the gate bench's policy (gate-policy.toml), one agent, then `airlock-bench load` (64
# keep-alive clients, 1 s warm-up, 5 s window) of the bench's auto-allowed POST /v1/calls:
# the same load as `airlock-bench gate`, on the real `airlock serve` process. Prints the
# rate, p50/p99, the server's CPU and context switches per call (over the whole run, warm-up
# included) and the load average. With `perf`, records the server for 2 s mid-run
# (/tmp/gate2/NAME/perf.data). SERVE_ENV (e.g. TOKIO_WORKER_THREADS=1) goes to the server.
set -e
bin=$1; bench=$2; name=$3; port=$4
here=$(dirname "$0")
d=/tmp/gate2/$name
IFS=: read -r port token pid < <("$here/serve.sh" "$bin" "$name" "$port" "$here/gate-policy.toml" | cut -d= -f2)
body='{"tool":"bench.op","arguments":{"resource":"res/item"}}'
cpu() { awk '{print $14+$15}' "/proc/$pid/stat"; }
ctx() { cat /proc/"$pid"/task/*/status | awk '/ctxt_switches/{s+=$2} END{print s}'; }
sleep 0.5
c0=$(cpu); x0=$(ctx)
if [ "$5" = perf ]; then (sleep 2; perf record -N -g -p "$pid" -o "$d/perf.data" -- sleep 2 >/dev/null 2>&1) & fi
out=$("$bench" load --url "http://127.0.0.1:$port/v1/calls" --token "$token" --body "$body" \
  --expect 201 --clients 64 --warmup-ms 1000 --window-ms 5000)
c1=$(cpu); x1=$(ctx)
kill "$pid"; wait "$pid" 2>/dev/null || true
# Calls sent over the whole 6 s run, estimated from the 5 s window's count.
calls=$(echo "$out" | jq '.requests * 6 / 5 | floor')
echo "$name $(echo "$out" | jq -c '{rate: (.requests / .window_s | floor), p50_ms, p99_ms, errors}')" \
  "cpu/call $(( (c1 - c0) * 10000 / calls ))us" \
  "switches/call $(echo "scale=1; ($x1 - $x0) / $calls" | bc)" \
  "load $(cut -d' ' -f1 /proc/loadavg)"
