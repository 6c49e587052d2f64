#!/usr/bin/env bash
# Runs every check airlock has, the way CI does: formatting, lints, then every test.
# Installs and starts what the tests need when it is missing, stops what it started, and
# exits non-zero on the first failure. `.ci/run` calls exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says how long the run has taken so far, to keep a CI run under 30 minutes.
step() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# One build serves every step: the crash tests need the test-only `failpoints` feature
# (inert unless AIRLOCK_FAILPOINT names a point, docs/security.md), and building all
# tests with it avoids compiling the workspace a second time without it.
features=(--workspace --locked --features airlock-cli/failpoints)

# shellcheck source=scripts/services.sh
source scripts/services.sh
trap stop_postgres EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy "${features[@]}" --all-targets -- -D warnings

step "PostgreSQL for the store and multi-node tests"
start_postgres

step "MCP test peers (server-filesystem and server-everything from npm, the mcp Python SDK)"
install_mcp_peers

step "chromium and playwright-core for the web inbox's browser tests"
install_browser

step "tests"
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi
cargo nextest run "${features[@]}" --no-fail-fast -E 'not binary(reliability)'
cargo test "${features[@]}" --doc

step "the server's end-to-end tests again, on PostgreSQL"
AIRLOCK_TEST_BACKEND=postgres cargo nextest run "${features[@]}" --no-fail-fast -E 'package(airlock-server)'

step "crash tests (every failpoint, random SIGKILLs; SQLite and PostgreSQL) and a 60 s soak"
# Longer: AIRLOCK_CRASH_ROUNDS=20 AIRLOCK_SOAK_SECS=600 scripts/test.sh
AIRLOCK_CRASH_ROUNDS="${AIRLOCK_CRASH_ROUNDS:-1}" AIRLOCK_SOAK_SECS="${AIRLOCK_SOAK_SECS:-60}" \
  cargo nextest run "${features[@]}" --no-fail-fast -E 'binary(reliability)'

step "API fuzzing: schemathesis against /openapi.json of a running server (no 5xx, errors as the spec says)"
install_schemathesis
cargo build "${features[@]}" --bins
scripts/api-fuzz.sh

step "cargo fuzz: each light target for a short run (docs/security.md has the long runs)"
install_cargo_fuzz
scripts/fuzz.sh

# The benchmarks' code is compiled by clippy --all-targets above; the release build they
# are measured with is not repeated here.
step "benchmarks run, small (CI checks that they run, not their numbers)"
target/debug/airlock-bench all --quick

step "all checks passed"
