import json,statistics as st,collections,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
d=collections.defaultdict(list)
for r in rows:
    side,case,rnd=r['label'].split('-')
    d[(case,side)].append((r['rate'],r['p99_us'],r['errors']))
for case in ['produce','consume','b1','b10']:
    o=d[(case,'old')];n=d[(case,'new')]
    if not o: continue
    mo=st.median([x[0] for x in o]);mn=st.median([x[0] for x in n])
    print('| %s | %s | %s | %.3f | %.1f → %.1f ms | %d |'%(case,' / '.join('{:,}'.format(round(x[0])) for x in o),' / '.join('{:,}'.format(round(x[0])) for x in n),mn/mo,st.median([x[1] for x in o])/1000,st.median([x[1] for x in n])/1000,sum(x[2] for x in o+n)))
