#!/bin/bash
# wrk_gate.sh PAIRS BIN_A [BIN_B ...]: the issue's independent load, reproduced. Each binary
# runs `airlock serve` on a fresh SQLite data dir with the gate bench's policy
# (gate-policy.toml) and one agent; then, PAIRS times, each server in turn gets
# `wrk -t2 -c64 -d10s` of auto-allowed `POST /v1/calls` (the audit append included) and
# prints requests/s, p50/p90/p99 (ms), the server's CPU per request (µs, from
# /proc/PID/stat) and the load average. Each round starts once no server has used CPU for
# a second, so a server sealing its audit records after its own round (at the lull) does not
# compete with the next one. SERVE_PG runs them on PostgreSQL (see serve.sh).
# ROUND_SECS sets a round's length (default 10). QUIET=0 starts each round at once, without
# the wait. With one binary, QUIET=0 gives the shape of the issue's own check: one server
# and back-to-back rounds.
set -e
pairs=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/bench/post_lua.sh
. "$here/post_lua.sh"
bins=("$@"); ports=(); pids=(); luas=()
i=0
for bin in "$@"; do
  d=/tmp/gate2/wrk$i
  IFS=: read -r port token pid < <("$here/serve.sh" "$bin" "wrk$i" $((17400 + i)) "$here/gate-policy.toml" | cut -d= -f2)
  pids+=("$pid")
  post_lua "$token" "$d/post.lua"
  ports+=($port); luas+=("$d/post.lua"); i=$((i + 1))
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
# CPU ticks (user + system) all the servers have used so far.
ticks() { for pid in "${pids[@]}"; do cat "/proc/$pid/stat"; done | awk '{t += $14 + $15} END {print t}'; }
# Waits (at most 30 s) until no server has used CPU for a second: a server that has just
# been loaded seals its new audit records at the lull that follows (airlock-gate seal.rs),
# and that work must not land in the next server's round.
quiet() {
  for _ in $(seq 30); do
    before=$(ticks); sleep 1
    [ "$(ticks)" = "$before" ] && return
  done
}
for p in $(seq "$pairs"); do
  for j in "${!ports[@]}"; do
    [ "${QUIET:-1}" = 0 ] || quiet
    cpu0=$(awk '{print $14 + $15}' "/proc/${pids[$j]}/stat")
    out=$(wrk -t2 -c64 -d"${ROUND_SECS:-10}s" -s "${luas[$j]}" "http://127.0.0.1:${ports[$j]}/v1/calls")
    cpu1=$(awk '{print $14 + $15}' "/proc/${pids[$j]}/stat")
    rate=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    count=$(echo "$out" | awk '/requests in/{print $1}')
    per=$(( count > 0 ? (cpu1 - cpu0) * 1000000 / $(getconf CLK_TCK) / count : 0 ))
    echo "round $p  ${bins[$j]}  rate $rate  $(echo "$out" | grep '^p50')  cpu/req ${per}us  load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
