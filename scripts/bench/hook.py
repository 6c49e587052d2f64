#!/usr/bin/env python3
"""Server time of allowed Claude Code hook calls on one keep-alive connection per server.

usage: hook.py NAME=PORT:TOKEN[:PID] [...] ROUNDS CALLS [PROJECT_DIR]
(serve.sh prints NAME=PORT:TOKEN:PID.) The payload is a Claude Code PreToolUse for `Read` of a
file in PROJECT_DIR, which the built-in policy allows.

Each round: for each server in turn, CALLS allowed `POST /v1/hooks/claude-code` calls
(fresh tool_use_id and file each), then 50 `GET /healthz`; prints median/p90 per server,
and, when the server's PID is given, its CPU and context switches per hook call.
"""
import http.client, json, os, statistics, sys, time, glob

def ctx(pid):
    total = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            for line in open(status):
                if "ctxt_switches" in line:
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total

def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]

servers = []
args = sys.argv[1:]
specs = [a for a in args if "=" in a]
rest = [a for a in args if "=" not in a]
rounds, calls = int(rest[0]), int(rest[1])
project = rest[2] if len(rest) > 2 else "/tmp/gate2/proj"
os.makedirs(project, exist_ok=True)
for spec in specs:
    name, rhs = spec.split("=", 1)
    parts = rhs.split(":")
    port, token = int(parts[0]), parts[1]
    pid = int(parts[2]) if len(parts) > 2 else None
    conn = http.client.HTTPConnection("127.0.0.1", port)
    servers.append(dict(name=name, port=port, token=token, pid=pid, conn=conn))

counter = [0]
def hook(server):
    counter[0] += 1
    n = counter[0]
    body = json.dumps({
        "session_id": f"bench-{os.getpid()}",
        "transcript_path": f"{project}/t.jsonl",
        "cwd": project,
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": f"{project}/f{n}.txt"},
        "tool_use_id": f"toolu_{os.getpid()}_{time.time_ns()}_{n}",
    })
    conn = server["conn"]
    start = time.perf_counter()
    conn.request("POST", "/v1/hooks/claude-code", body=body,
                 headers={"Authorization": "Bearer " + server["token"],
                          "Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    took = time.perf_counter() - start
    if reply.status != 200 or b'"allow"' not in data:
        raise SystemExit(f"not allowed: {reply.status} {data[:300]!r}")
    return took

def healthz(server):
    conn = server["conn"]
    start = time.perf_counter()
    conn.request("GET", "/healthz")
    reply = conn.getresponse()
    reply.read()
    return time.perf_counter() - start

for server in servers:  # warm-up
    for _ in range(20):
        hook(server)
print(f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)
for r in range(rounds):
    for server in servers:
        pid = server["pid"]
        before = (cpu(pid), ctx(pid)) if pid else None
        times = [hook(server) for _ in range(calls)]
        after = (cpu(pid), ctx(pid)) if pid else None
        health = [healthz(server) for _ in range(50)]
        extra = ""
        if pid:
            extra = (f"  cpu/call {1e6 * (after[0] - before[0]) / calls:.0f} us"
                     f"  switches/call {(after[1] - before[1]) / calls:.1f}")
        print(f"round {r + 1} {server['name']:>8}: median {1e3 * statistics.median(times):.2f} ms"
              f"  p90 {1e3 * pct(times, 0.9):.2f} ms  healthz median {1e3 * statistics.median(health):.2f} ms"
              f"{extra}", flush=True)
print(f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)
