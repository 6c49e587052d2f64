# Sourced by the gate's wrk scripts. post_lua TOKEN FILE: writes the wrk script that posts
# the gate bench's auto-allowed call as the agent with TOKEN and, when the run is done,
# prints p50/p90/p99 (ms) and the counts of socket errors and non-2xx answers.
post_lua() {
  cat > "$2" <<LUA
wrk.method = "POST"
wrk.body = '{"tool":"bench.op","arguments":{"resource":"res/item"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $1"
done = function(summary, latency, requests)
  io.write(string.format("p50 %.2f p90 %.2f p99 %.2f errors %d non2xx %d\n",
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
LUA
}
