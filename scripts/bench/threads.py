#!/usr/bin/env python3
"""threads.py PID SPEC CALLS: per-thread context switches (voluntary/involuntary) around CALLS hook calls."""
import glob, subprocess, sys, os
pid, spec, calls = sys.argv[1], sys.argv[2], sys.argv[3]
def snap():
    out = {}
    for d in glob.glob(f"/proc/{pid}/task/*"):
        try:
            name = open(d + "/comm").read().strip()
            v = n = 0
            for line in open(d + "/status"):
                if line.startswith("voluntary_ctxt"): v = int(line.split()[1])
                if line.startswith("nonvoluntary_ctxt"): n = int(line.split()[1])
            st = open(d + "/stat").read().rsplit(")", 1)[1].split()
            out[d.rsplit("/", 1)[1]] = (name, v, n, int(st[11]) + int(st[12]))
        except FileNotFoundError:
            pass
    return out
a = snap()
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "hook.py"), spec, "1", calls], check=True, stdout=subprocess.DEVNULL)
b = snap()
c = int(calls) + 20
for tid, (name, v, n, t) in sorted(b.items()):
    v0, n0, t0 = a.get(tid, (name, 0, 0, 0))[1:]
    if v - v0 or n - n0:
        print(f"{tid:>8} {name:<20} vol/call {(v - v0) / c:6.2f} invol/call {(n - n0) / c:6.2f} cpu ticks {t - t0}")
