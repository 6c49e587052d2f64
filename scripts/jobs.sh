# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/fuzz.sh: runs independent steps side by side as
# background jobs, each with its own log, and fails when any of them failed.
#
#   start_job NAME FUNCTION_OR_COMMAND [ARGS…]   # output to $JOB_LOGS/NAME.log
#   wait_jobs                                     # waits for all; prints each failed log
#   stop_jobs                                     # on exit: stops those still running
#
# Each job runs in a subshell with `set -euo pipefail` in its own process group, so
# stop_jobs ends it with everything it started (cargo, nextest, the servers under test).
# wait_jobs waits for every job even after one failed, so no job is left running and
# every failure is shown, then returns non-zero if any failed.

JOB_LOGS="${JOB_LOGS:-$PWD/target/ci-logs}"
JOB_NAMES=()
JOB_PIDS=()

start_job() {
  local name=$1
  shift
  mkdir -p "$JOB_LOGS"
  # Monitor mode only while forking: the job gets its own process group. Its stdin is
  # /dev/null, so a job started from a terminal never stops on a read (SIGTTIN).
  set -m
  (
    set -euo pipefail
    started=$SECONDS
    "$@"
    echo "==> $name passed in $((SECONDS - started)) s"
  ) </dev/null >"$JOB_LOGS/$name.log" 2>&1 &
  JOB_PIDS+=("$!")
  set +m
  JOB_NAMES+=("$name")
  echo "    started $name (log: $JOB_LOGS/$name.log)"
}

wait_jobs() {
  local i status started=$SECONDS
  local failed=()
  for i in "${!JOB_PIDS[@]}"; do
    status=0
    wait "${JOB_PIDS[$i]}" || status=$?
    if [[ $status == 0 ]]; then
      echo "    ${JOB_NAMES[$i]} passed ($(tail -n 1 "$JOB_LOGS/${JOB_NAMES[$i]}.log"))"
    else
      failed+=("${JOB_NAMES[$i]}")
      echo
      echo "---------------- ${JOB_NAMES[$i]} FAILED (exit $status); its log:"
      cat "$JOB_LOGS/${JOB_NAMES[$i]}.log"
      echo "---------------- end of ${JOB_NAMES[$i]}"
    fi
  done
  JOB_NAMES=()
  JOB_PIDS=()
  echo "    all jobs ended after $((SECONDS - started)) s of waiting"
  if [[ ${#failed[@]} -gt 0 ]]; then
    echo "failed: ${failed[*]}" >&2
    return 1
  fi
}

stop_jobs() {
  local pid
  for pid in "${JOB_PIDS[@]}"; do
    # The job's process group: the subshell and all it started.
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in "${JOB_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  JOB_NAMES=()
  JOB_PIDS=()
}
