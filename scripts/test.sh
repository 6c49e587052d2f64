#!/usr/bin/env bash
# Runs every check airlock has, the way CI does: formatting, lints, then every test.
# Installs and starts what the tests need when it is missing, stops what it started, and
# exits non-zero on any failure. `.ci/run` calls exactly this script. docs/testing.md
# describes the steps, their times and how to run one part.
set -euo pipefail
cd "$(dirname "$0")/.."

# One build serves every step: the crash tests need the test-only `failpoints` feature
# (inert unless AIRLOCK_FAILPOINT names a point, docs/security.md), and building all
# tests with it avoids compiling the workspace a second time without it.
features=(--workspace --locked --features airlock-cli/failpoints)

# shellcheck source=scripts/services.sh
source scripts/services.sh
# shellcheck source=scripts/jobs.sh
source scripts/jobs.sh

# Each step prints the run's elapsed time; the end (or a failure) prints every step's
# duration, the figures docs/testing.md keeps.
step_names=()
step_starts=()
step() {
  step_names+=("$*")
  step_starts+=("$SECONDS")
  printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"
}
print_times() {
  local i end
  echo
  echo "step times (s):"
  for i in "${!step_names[@]}"; do
    end=${step_starts[$((i + 1))]:-$SECONDS}
    printf '  %5d  %s\n' $((end - step_starts[i])) "${step_names[$i]}"
  done
  printf '  %5d  total\n' "$SECONDS"
}
finish() {
  local status=$?
  stop_jobs
  stop_postgres
  print_times
  exit "$status"
}
trap finish EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors); the test peers download meanwhile"
# npm, PyPI and apt downloads wait on the network, not the CPU: fetch them while clippy
# compiles. They land in target/test-peers, the Python site and /usr; the same functions
# run again below to export where they are (then they find everything, install nothing).
fetch_peers() {
  install_mcp_peers
  install_agent_peers
  install_browser
  install_schemathesis
}
start_job peers fetch_peers
cargo clippy "${features[@]}" --all-targets -- -D warnings
wait_jobs

step "PostgreSQL, MCP test peers, coding agents, chromium and playwright-core"
start_postgres
install_mcp_peers
install_agent_peers
install_browser

step "tests (every crate but the crash tests) and doc tests"
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi
# Three at a time on two cores: most tests wait on servers, processes and fsync (the
# store's 229 tests: 105 s with two, 87 s with four), and every test waits on the condition
# it needs, never on a fixed sleep (docs/testing.md, "How to hunt a flake").
cargo nextest run "${features[@]}" --no-fail-fast --test-threads 3 -E 'not binary(reliability)'
cargo test "${features[@]}" --doc

step "binaries for schemathesis and the bench (the test build's features: nothing recompiles)"
# `--tests` keeps the dev-dependencies' features (airlock-llm's `fake`, say) in the
# resolution, as in the nextest build above; plain `--bins` would drop them and
# recompile airlock-llm and every crate above it.
cargo build "${features[@]}" --bins --tests

step "side by side: server tests on PostgreSQL, crash tests + soak, schemathesis, fuzz build"
install_schemathesis
postgres_rerun() {
  AIRLOCK_TEST_BACKEND=postgres cargo nextest run "${features[@]}" --no-fail-fast -E 'package(airlock-server)'
}
crash_tests() {
  # Longer: AIRLOCK_CRASH_ROUNDS=20 AIRLOCK_SOAK_SECS=600 scripts/test.sh
  AIRLOCK_CRASH_ROUNDS="${AIRLOCK_CRASH_ROUNDS:-1}" AIRLOCK_SOAK_SECS="${AIRLOCK_SOAK_SECS:-60}" \
    cargo nextest run "${features[@]}" --no-fail-fast -E 'binary(reliability)'
}
# The server's end-to-end tests again, on PostgreSQL.
start_job postgres-rerun postgres_rerun
# Every failpoint and random SIGKILLs, on SQLite and PostgreSQL, and a 60 s soak.
start_job crash-tests crash_tests
# schemathesis against /openapi.json of a running server: no 5xx, errors as the spec says.
start_job api-fuzz scripts/api-fuzz.sh
# cargo-fuzz and the instrumented build of the fuzz targets (in fuzz/target): compiling
# only, so the short fuzz runs below get the whole machine.
fuzz_build() {
  install_cargo_fuzz
  scripts/fuzz.sh build
}
start_job fuzz-build fuzz_build
wait_jobs

step "cargo fuzz: each light target for a short run (docs/security.md has the long runs)"
scripts/fuzz.sh

# The benchmarks' code is compiled by clippy --all-targets above; the release build they
# are measured with is not repeated here.
step "benchmarks run, small (CI checks that they run, not their numbers)"
target/debug/airlock-bench all --quick

step "all checks passed"
