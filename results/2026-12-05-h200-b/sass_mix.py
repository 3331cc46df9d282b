import csv, sys, collections
def load(f):
    rows = list(csv.reader(open(f)))
    hdr = rows[1]; ie = hdr.index("Instructions Executed"); src = hdr.index("Source"); st = hdr.index("Warp Stall Sampling (All Samples)")
    out = []
    for r in rows[2:]:
        if len(r) <= ie: continue
        try: n = int(r[ie].replace(",", "")); s = int(r[st].replace(",", ""))
        except: continue
        out.append((r[0], r[src].strip(), n, s))
    return out
for f in sys.argv[1:]:
    rows = load(f)
    tot = sum(n for _,_,n,_ in rows); stot = sum(s for *_,s in rows)
    c = collections.Counter(); cs = collections.Counter()
    for a, s, n, smp in rows:
        op = s.split()[0] if s else "?"
        if op.startswith("@"): op = s.split()[1]
        op = op.split(".")[0]
        c[op] += n; cs[op] += smp
    print(f, "total inst", tot, "samples", stot, "static", len(rows))
    for op, n in c.most_common(28): print(f"  {op:10s} {n/1e6:9.1f}M {100*n/tot:5.1f}%  stall-samples {100*cs[op]/stot:5.1f}%")
