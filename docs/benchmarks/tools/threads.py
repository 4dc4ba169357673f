#!/usr/bin/env python3
"""Per-thread CPU seconds of a process: `threads.py snap PID OUT` then `threads.py diff A B [SECS]`."""
import json, os, sys, re
HZ = os.sysconf('SC_CLK_TCK')
def snap(pid):
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            s = open(f'/proc/{pid}/task/{tid}/stat').read()
        except OSError:
            continue
        comm = s[s.index('(')+1:s.rindex(')')]
        f = s[s.rindex(')')+2:].split()
        out[tid] = [comm, (int(f[11]) + int(f[12])) / HZ, int(f[11]) / HZ, int(f[12]) / HZ]
    return out
if sys.argv[1] == 'snap':
    json.dump(snap(sys.argv[2]), open(sys.argv[3], 'w'))
else:
    a = json.load(open(sys.argv[2])); b = json.load(open(sys.argv[3]))
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else None
    groups = {}
    for tid, (comm, tot, u, s) in b.items():
        base = a.get(tid, [comm, 0, 0, 0])
        d = (tot - base[1], u - base[2], s - base[3])
        g = re.sub(r'[-_]?\d+$', '', comm)
        G = groups.setdefault(g, [0, 0, 0, 0])
        G[0] += d[0]; G[1] += d[1]; G[2] += d[2]; G[3] += 1
    total = sum(v[0] for v in groups.values())
    line = f"total {total:.2f} cpu-s" + (f" = {total/secs:.2f} cores over {secs:.1f} s" if secs else "")
    print(line)
    for g, (t, u, s, n) in sorted(groups.items(), key=lambda x: -x[1][0]):
        if t > 0.005:
            print(f"  {g:<20} x{n:<3} {t:7.2f} cpu-s (user {u:.2f}, sys {s:.2f})" + (f"  {t/secs:.2f} cores" if secs else ""))
