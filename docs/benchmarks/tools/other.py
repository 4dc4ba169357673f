import re
m = open('/tmp/benchrun/machine.txt').read()
d = dict((k, float(v.rstrip('%'))) for k, v in (x.split() for x in m.split(': ',1)[1].strip().split(', ')))
busy = 2 * (100 - d.get('idle', 0) - d.get('iowait', 0)) / 100
server = float(re.search(r'= ([\d.]+) cores', open('/tmp/benchrun/threads.txt').read()).group(1))
t = re.search(r'user ([\d.]+) s, sys ([\d.]+) s, wall ([\d.]+) s', open('/tmp/benchrun/time.txt').read())
bench = (float(t.group(1)) + float(t.group(2))) / float(t.group(3))
print(f"other processes: {max(0, busy - server - bench):.2f} cores")
