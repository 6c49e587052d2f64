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

step "benchmarks compile"
cargo bench --workspace --locked --no-run

step "all checks passed"
