import csv, sys, collections
for f in sys.argv[1:]:
    rows = list(csv.reader(open(f))); hdr = rows[1]
    ie = hdr.index("Instructions Executed"); src = hdr.index("Source")
    cols = [c for c in hdr if c.startswith("stall_") and "Not Issued" not in c]
    idx = {c: hdr.index(c) for c in cols}
    tot = collections.Counter(); byop = collections.defaultdict(collections.Counter)
    for r in rows[2:]:
        if len(r) <= ie: continue
        s = r[src].strip(); op = s.split()[0] if s else "?"
        if op.startswith("@"): op = s.split()[1]
        op = op.split(".")[0]
        for c in cols:
            try: v = int(r[idx[c]].replace(",", ""))
            except: continue
            tot[c] += v; byop[c][op] += v
    T = sum(tot.values()); print(f, "samples", T)
    for c, v in tot.most_common(7):
        print(f"  {c:22s} {100*v/T:5.1f}%  top ops:", ", ".join(f"{o} {100*n/T:.1f}" for o, n in byop[c].most_common(5)))
