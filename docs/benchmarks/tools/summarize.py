import re, sys, statistics
rows = []
for f in sys.argv[1:]:
    cur = None
    for line in open(f):
        m = re.match(r'=== (\S+)', line)
        if m:
            cur = {'label': m.group(1)}; rows.append(cur); continue
        if cur is None: continue
        if line.startswith('| ') and 'workload' not in line and '---' not in line:
            c = [x.strip() for x in line.strip().strip('|').split('|')]
            cur.setdefault('rows', []).append(c)
        m = re.match(r'bench process: user ([\d.]+) s, sys ([\d.]+) s, wall ([\d.]+) s', line)
        if m: cur['bench'] = (float(m.group(1)) + float(m.group(2))) / float(m.group(3))
        m = re.match(r'machine: (.*)', line)
        if m:
            d = dict((k, float(v.rstrip('%'))) for k, v in (x.split() for x in m.group(1).split(', ')))
            cur['busy'] = 2 * (100 - d.get('idle', 0) - d.get('iowait', 0)) / 100
        m = re.match(r'total ([\d.]+) cpu-s = ([\d.]+) cores', line)
        if m: cur['server'] = float(m.group(2))
        m = re.match(r'\s+(\S+)\s+x\d+\s+([\d.]+) cpu-s .*\s([\d.]+) cores', line)
        if m: cur.setdefault('threads', {})[m.group(1)] = float(m.group(3))
print('| run | workload | offered msg/s | msgs | secs | msg/s | p50 ms | p99 ms | p99.9 ms | server cores (tokio / planner / wal) | bench cores | other processes, cores |')
print('|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|')
for r in rows:
    for c in r.get('rows', []):
        t = r.get('threads', {})
        other = r.get('busy', 0) - r.get('server', 0) - r.get('bench', 0)
        print(f"| {r['label']} | {c[0]} | {c[6]} | {c[7]} | {c[8]} | {c[9]} | {c[10]} | {c[11]} | {c[12]} | {r.get('server',0):.2f} ({t.get('tokio-rt-worker',0):.2f} / {t.get('baton-planner',0):.2f} / {t.get('baton-wal',0):.2f}) | {r.get('bench',0):.2f} | {max(0,other):.2f} |")
