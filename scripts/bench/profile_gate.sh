#!/bin/bash
# profile_gate.sh BIN NAME: one fresh `BIN serve` on SQLite (serve.sh), a 5 s warm-up of
# the gate's `wrk -t2 -c64` load, then `perf record --call-graph dwarf` of the server for
# 8 s of a 10 s round, into /tmp/NAME.perf (read it with `perf report -i /tmp/NAME.perf`).
# Build BIN with debug info (CARGO_PROFILE_RELEASE_DEBUG=1) for readable stacks.
# Measurements of BENCHMARKS.md, issue 19.
set -e
cd "$(dirname "$0")"
bin=$1; name=$2
IFS=: read -r port token pid < <(./serve.sh "$bin" "$name" 17497 "$PWD/gate-policy.toml" | cut -d= -f2)
script=$(mktemp --suffix .lua)
# shellcheck source=scripts/bench/post_lua.sh
. ./post_lua.sh
post_lua "$token" "$script"
wrk -t2 -c64 -d5s -s "$script" "http://127.0.0.1:$port/v1/calls" > /dev/null
perf record -F 499 --call-graph dwarf,16384 -p "$pid" -o "/tmp/$name.perf" -- sleep 8 2>/dev/null &
wrk -t2 -c64 -d10s -s "$script" "http://127.0.0.1:$port/v1/calls" | grep -E 'Requests/sec|Latency'
wait
kill "$pid"; wait "$pid" 2>/dev/null || true
rm -rf "/tmp/gate2/$name" "$script"
