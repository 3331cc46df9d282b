# Summaries of interleaved A/B runs in a call's folder W.
#   summ.py fwd W PREFIX A B   ab_fwd.py JSON files PREFIX_{A,B}_{round}.json: per shape, mean ms of each
#                              build, B/A time ratio per round, x FA2 of each (FA2 pooled over all runs)
#   summ.py bwd W PREFIX A B   bwd_bench.py text PREFIX_{A,B}{round}.txt: the same
#   summ.py pb W PREFIX A B    peer_bench.py JSON (any sweep) PREFIX_{A,B}{round}.json, beside cuDNN
import json, os, re, sys
kind, W, pre, A, B = sys.argv[1:6]
R = {}  # point -> build -> [(ms, peer_ms)]
for f in sorted(os.listdir(W)):
    m = re.match(rf"{pre}_({A}|{B})_?(\d+)\.{'txt' if kind == 'bwd' else 'json'}$", f)
    if not m: continue
    p = os.path.join(W, f)
    if kind == "fwd":
        for k, x in json.load(open(p)).items(): R.setdefault(k, {}).setdefault(m.group(1), []).append((x["ms"], x["fa2_ms"]))
    elif kind == "bwd":
        for l in open(p):
            x = re.match(r"(d\d+\s+s\d+\s+b\d+\s+h\d+\s+\w+)\s+portattn\s+([\d.]+) ms.*FA2\s+([\d.]+) ms", l)
            if x: R.setdefault(re.sub(r"\s+", " ", x.group(1)), {}).setdefault(m.group(1), []).append((float(x.group(2)), float(x.group(3))))
    else:
        for row in json.load(open(p))["rows"]:
            im = row["impls"]
            key = ("%s b%d skv%d d%d" % (row["dtype"], row["b"], row["skv"], row["d"]) if row["mode"] == "decode" else
                   "%s b%d s%d h%d d%d%s" % (row["dtype"], row["b"], row["s"], row["h"], row["d"], " c" if row["causal"] else ""))
            pm = im.get("cuDNN", {}).get("ms") or im.get("FA2", {}).get("ms") or float("nan")
            R.setdefault(key, {}).setdefault(m.group(1), []).append((im["portattn"]["ms"], pm))
mean = lambda v: sum(v) / len(v)
peer = "cuDNN" if kind == "pb" else "FA2"
print(f"{'point':28s} {A + ' ms':>9s} {B + ' ms':>9s} {B + '/' + A + ' time per round':>24s}  x{peer} {A:>5s} {B:>5s}  spread")
for k, v in R.items():
    if A not in v or B not in v: continue
    a, b = [x[0] for x in v[A]], [x[0] for x in v[B]]
    pm = mean([x[1] for y in (A, B) for x in v[y]])
    sp = max(100 * (max(z) - min(z)) / mean(z) for z in (a, b))
    print(f"{k:28s} {mean(a):9.4f} {mean(b):9.4f} {' '.join(f'{y / x:.3f}' for x, y in zip(a, b)):>24s}  "
          f"{pm / mean(a):6.3f} {pm / mean(b):6.3f}  {sp:.1f}%")
