#!/usr/bin/env bash
# Fuzzing with cargo fuzz (issue 10): libFuzzer targets in fuzz/ (its own workspace,
# excluded from the main one). libFuzzer needs nightly compiler flags; on the stable
# toolchain RUSTC_BOOTSTRAP=1 unlocks them.
#
#   scripts/fuzz.sh                 # short: every light target for 20 s
#   AIRLOCK_FUZZ_SECONDS=600 scripts/fuzz.sh              # at length
#   AIRLOCK_FUZZ_SERVER=1 scripts/fuzz.sh                 # also the request-body target
#                                                         # (builds the whole server)
#   scripts/fuzz.sh build           # only build the targets (CI does it while tests run)
#
# libFuzzer uses one core per target, so the targets run AIRLOCK_FUZZ_JOBS at a time
# (default: the number of cores), each for the full time, with its log in
# target/ci-logs/fuzz-TARGET.log.
#
# Seeds are committed in fuzz/seeds/TARGET (read-only here); what libFuzzer learns goes
# to fuzz/corpus/TARGET and crashes to fuzz/artifacts/TARGET (both git-ignored). A crash
# fails the script; fix it with a regression unit test, then add the input to the seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/jobs.sh
source scripts/jobs.sh
trap stop_jobs EXIT
cd fuzz

seconds="${AIRLOCK_FUZZ_SECONDS:-20}"
targets=(policy_load canonical_json hook_payloads secrets_redact)
features=()
if [[ -n "${AIRLOCK_FUZZ_SERVER:-}" ]]; then
  targets+=(request_bodies)
  features=(--features server)
fi
export RUSTC_BOOTSTRAP=1

if [[ "${1:-}" == build ]]; then
  # The same build `cargo fuzz run` makes (release, address sanitizer), so it is reused.
  for target in "${targets[@]}"; do
    cargo fuzz build "${features[@]}" "$target"
  done
  exit 0
fi

fuzz_target() {
  local target=$1
  mkdir -p "corpus/$target"
  cargo fuzz run "${features[@]}" "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
}

# Build first (one cargo at a time), then run side by side.
for target in "${targets[@]}"; do
  cargo fuzz build "${features[@]}" "$target"
done
parallel="${AIRLOCK_FUZZ_JOBS:-$(nproc)}"
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  for target in "${targets[@]:i:parallel}"; do
    echo "--> $target (${seconds}s)"
    start_job "fuzz-$target" fuzz_target "$target"
  done
  wait_jobs
done
