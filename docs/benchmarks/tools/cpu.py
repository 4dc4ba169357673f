import sys
def read():
    f = open('/proc/stat').readline().split()[1:]
    return [int(x) for x in f]
if sys.argv[1] == 'snap':
    open(sys.argv[2], 'w').write(' '.join(map(str, read())))
else:
    a = [int(x) for x in open(sys.argv[2]).read().split()]
    b = [int(x) for x in open(sys.argv[3]).read().split()]
    d = [y - x for x, y in zip(a, b)]
    tot = sum(d[:8]) or 1
    names = ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal']
    print('machine: ' + ', '.join(f'{n} {100*v/tot:.0f}%' for n, v in zip(names, d[:8]) if v))
