#!/bin/bash
# serve.sh BIN NAME PORT [POLICY]: `BIN serve` on a fresh SQLite data dir /tmp/gate2/NAME
# listening on 127.0.0.1:PORT (the built-in policy, or POLICY with `--policy`; SERVE_ENV,
# e.g. TOKIO_WORKER_THREADS=1, goes to the server), and one agent; prints
# NAME=PORT:TOKEN:PID for hook.py. With SERVE_PG set to a PostgreSQL server's URL (a role
# that may create databases, e.g. postgres://airlock@127.0.0.1:54329), the server runs on a
# fresh database airlock_bench_NAME there instead (made with `${PSQL:-psql}`).
# Measurements of BENCHMARKS.md, issue 19.
set -e
bin=$1; name=$2; port=$3
policy=()
if [ -n "$4" ]; then policy=(--policy "$4"); fi
d=/tmp/gate2/$name; rm -rf "$d"; mkdir -p "$d"
db=()
if [ -n "$SERVE_PG" ]; then
  "${PSQL:-psql}" "$SERVE_PG/postgres" -q -c "DROP DATABASE IF EXISTS airlock_bench_$name" \
    -c "CREATE DATABASE airlock_bench_$name" >/dev/null 2>&1
  db=(--db "$SERVE_PG/airlock_bench_$name")
fi
# shellcheck disable=SC2086
env $SERVE_ENV "$bin" serve --data-dir "$d" "${db[@]}" --listen "127.0.0.1:$port" "${policy[@]}" > "$d/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
token=$("$bin" agents create bench --json --url "http://127.0.0.1:$port" --data-dir "$d" | jq -r .token)
echo "$name=$port:$token:$pid"
