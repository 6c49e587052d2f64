#!/bin/bash
# wrk_single.sh BIN NAME ROUNDS [SECONDS]: one fresh `BIN serve` on SQLite (serve.sh), then
# ROUNDS back-to-back `wrk -t2 -c64` rounds of SECONDS (default 10) posting the same
# auto-allowed call, with no second server beside it: the shape of issue 19's own check.
# Prints rate, p50/p90/p99 ms, the server's CPU per request and the load average per round.
# Measurements of BENCHMARKS.md, issue 19.
set -e
cd "$(dirname "$0")"
bin=$1; name=$2; rounds=$3; seconds=${4:-10}
IFS=: read -r port token pid < <(./serve.sh "$bin" "$name" 17496 "$PWD/gate-policy.toml" | cut -d= -f2)
script=$(mktemp --suffix .lua)
cat > "$script" <<LUA
wrk.method = "POST"
wrk.body = '{"tool":"bench.op","arguments":{"resource":"res/item"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
done = function(summary, latency, requests)
  io.write(string.format("p50 %.2f p90 %.2f p99 %.2f\n", latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000))
end
LUA
for r in $(seq "$rounds"); do
  c0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  out=$(wrk -t2 -c64 -d"${seconds}s" -s "$script" "http://127.0.0.1:$port/v1/calls")
  c1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  n=$(echo "$out" | awk '/requests in/{print $1}')
  echo "$name r$r $(echo "$out" | awk '/Requests\/sec/{print $2}') $(echo "$out" | grep ^p50) cpu/req $(( (c1 - c0) * 10000 / n ))us load $(cut -d' ' -f1 /proc/loadavg)"
done
kill "$pid"; wait "$pid" 2>/dev/null || true
rm -rf "/tmp/gate2/$name" "$script"
