#!/usr/bin/env python3
"""The hook process per allowed call: `airlock hook claude-code` against `/bin/true`, alternated.

usage: hook_process.py PORT TOKEN (serve.sh prints NAME=PORT:TOKEN:PID; the binary is AIRLOCK_BIN,
else /work/bench-new/airlock). Each run from Python's subprocess with a Claude Code PreToolUse
payload for `Read` of /tmp/hookproj/a.txt on stdin (a fresh tool_use_id each), 3 warm-ups,
then 60 pairs; prints the medians and the median of the pair differences.
"""
import subprocess, os, sys, time, statistics, json
port, tok = sys.argv[1], sys.argv[2]
env = dict(os.environ, AIRLOCK_URL=f"http://127.0.0.1:{port}", AIRLOCK_TOKEN=tok)
os.makedirs("/tmp/hookproj", exist_ok=True)
open("/tmp/hookproj/a.txt", "w").write("hi\n")
def payload(n):
    return json.dumps({"session_id":"s1","transcript_path":"/tmp/hookproj/t.jsonl","cwd":"/tmp/hookproj",
        "hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/tmp/hookproj/a.txt"},
        "tool_use_id":f"toolu_{os.getpid()}_{n}_{time.time_ns()}"}).encode()
def run(cmd, n):
    t=time.perf_counter(); r=subprocess.run(cmd, input=payload(n), env=env, capture_output=True); w=time.perf_counter()-t
    return w, r
hook=[os.environ.get("AIRLOCK_BIN", "/work/bench-new/airlock"),"hook","claude-code"]; true=["/bin/true"]
for i in range(3): run(hook,i); run(true,i)
hw, tw = [], []
for i in range(60):
    w, r = run(hook, 100+i); hw.append(w*1000)
    assert r.returncode == 0 and b"allow" in r.stdout, (r.returncode, r.stdout, r.stderr)
    w, _ = run(true, i); tw.append(w*1000)
print(f"hook median {statistics.median(hw):.2f} ms p90 {sorted(hw)[int(len(hw)*0.9)]:.2f}; /bin/true median {statistics.median(tw):.2f} ms; difference of medians {statistics.median(hw)-statistics.median(tw):.2f} ms; median of pair differences {statistics.median([h-t for h,t in zip(hw,tw)]):.2f} ms")
