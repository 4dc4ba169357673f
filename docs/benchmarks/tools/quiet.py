# Wait until the machine is quiet: idle >= MIN% over a 3 s sample, at most MAX seconds. Prints what it saw.
import sys, time
MIN = float(sys.argv[1]) if len(sys.argv) > 1 else 75
MAX = float(sys.argv[2]) if len(sys.argv) > 2 else 180
def read():
    return [int(x) for x in open('/proc/stat').readline().split()[1:9]]
t0 = time.time()
while True:
    a = read(); time.sleep(3); b = read()
    d = [y - x for x, y in zip(a, b)]
    idle = 100 * (d[3] + d[4]) / max(1, sum(d))
    if idle >= MIN or time.time() - t0 > MAX:
        print(f"quiet gate: idle {idle:.0f}% after {time.time()-t0:.0f} s")
        break
