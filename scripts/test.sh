#!/usr/bin/env bash
# Runs every check airlock has, the way CI does: formatting, lints, then every test.
# Installs and starts what the tests need when it is missing, stops what it started, and
# exits non-zero on the first failure. `.ci/run` calls exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# shellcheck source=scripts/services.sh
source scripts/services.sh
trap stop_postgres EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "PostgreSQL for the store and multi-node tests"
start_postgres

step "MCP test peers (server-filesystem and server-everything from npm, the mcp Python SDK)"
install_mcp_peers

step "chromium and playwright-core for the web inbox's browser tests"
install_browser

step "tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
  cargo test --workspace --locked --doc
else
  cargo test --workspace --locked --no-fail-fast
fi

step "the server's end-to-end tests again, on PostgreSQL"
if cargo nextest --version >/dev/null 2>&1; then
  AIRLOCK_TEST_BACKEND=postgres cargo nextest run -p airlock-server --locked --no-fail-fast
else
  AIRLOCK_TEST_BACKEND=postgres cargo test -p airlock-server --locked --no-fail-fast
fi

step "crash tests (every failpoint, random SIGKILLs; SQLite and PostgreSQL) and a 60 s soak"
# The binary is built with the test-only `failpoints` feature (docs/security.md); longer:
# AIRLOCK_CRASH_ROUNDS=20 AIRLOCK_SOAK_SECS=600 scripts/test.sh
cargo clippy -p airlock-cli --features failpoints --test reliability --locked -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
  AIRLOCK_CRASH_ROUNDS="${AIRLOCK_CRASH_ROUNDS:-1}" AIRLOCK_SOAK_SECS="${AIRLOCK_SOAK_SECS:-60}" \
    cargo nextest run -p airlock-cli --features failpoints --test reliability --locked --no-fail-fast
else
  AIRLOCK_CRASH_ROUNDS="${AIRLOCK_CRASH_ROUNDS:-1}" AIRLOCK_SOAK_SECS="${AIRLOCK_SOAK_SECS:-60}" \
    cargo test -p airlock-cli --features failpoints --test reliability --locked --no-fail-fast
fi

step "API fuzzing: schemathesis against /openapi.json of a running server (no 5xx, errors as the spec says)"
install_schemathesis
cargo build -p airlock-cli --locked
scripts/api-fuzz.sh

step "cargo fuzz: each light target for a short run (docs/security.md has the long runs)"
install_cargo_fuzz
scripts/fuzz.sh

step "benchmarks compile"
cargo bench --workspace --locked --no-run

step "benchmarks run, small (CI checks that they run, not their numbers)"
cargo build -p airlock-cli --locked
cargo run -p airlock-bench --locked -- all --quick

step "all checks passed"
