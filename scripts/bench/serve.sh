#!/bin/bash
# serve.sh BIN NAME PORT: `BIN serve` on a fresh SQLite data dir /tmp/gate2/NAME listening on
# 127.0.0.1:PORT (built-in policy), and one agent; prints NAME=PORT:TOKEN:PID for hook.py.
# Measurements of BENCHMARKS.md, issue 19 ("Two round trips per batch").
set -e
bin=$1; name=$2; port=$3
d=/tmp/gate2/$name; rm -rf "$d"; mkdir -p "$d"
"$bin" serve --data-dir "$d" --listen "127.0.0.1:$port" > "$d/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
token=$("$bin" agents create hookbench --json --url "http://127.0.0.1:$port" --data-dir "$d" | jq -r .token)
echo "$name=$port:$token:$pid"
