#!/usr/bin/env bash
# Fuzzing with cargo fuzz (issue 10): libFuzzer targets in fuzz/ (its own workspace,
# excluded from the main one). libFuzzer needs nightly compiler flags; on the stable
# toolchain RUSTC_BOOTSTRAP=1 unlocks them.
#
#   scripts/fuzz.sh                 # short: every light target for 20 s
#   AIRLOCK_FUZZ_SECONDS=600 scripts/fuzz.sh              # at length
#   AIRLOCK_FUZZ_SERVER=1 scripts/fuzz.sh                 # also the request-body target
#                                                         # (builds the whole server)
#
# Seeds are committed in fuzz/seeds/TARGET (read-only here); what libFuzzer learns goes
# to fuzz/corpus/TARGET and crashes to fuzz/artifacts/TARGET (both git-ignored). A crash
# fails the script; fix it with a regression unit test, then add the input to the seeds.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${AIRLOCK_FUZZ_SECONDS:-20}"
targets=(policy_load canonical_json hook_payloads secrets_redact)
features=()
if [[ -n "${AIRLOCK_FUZZ_SERVER:-}" ]]; then
  targets+=(request_bodies)
  features=(--features server)
fi
export RUSTC_BOOTSTRAP=1

for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  echo "--> $target (${seconds}s)"
  cargo fuzz run "${features[@]}" "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
