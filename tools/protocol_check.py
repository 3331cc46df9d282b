#!/usr/bin/env python3
"""portattn-bench against the in-process harness (tools/peer_bench.py) on the same shapes.

  python3 tools/protocol_check.py --bench b1.json b2.json b3.json --harness h1.json h2.json h3.json

Each pair of files is one round of an interleaved run (bench, harness, bench, harness, ...) on one
GPU, both timed by the do_bench protocol. Per shape: each tool's median over the rounds, the ratio,
and the largest difference allowed (--tol, 3%). Exit 1 when a shape differs by more.
"""
import argparse
import json
import statistics
import sys


def bench_rows(path):
    out = {}
    with open(path) as f:
        doc = json.load(f)
    for r in doc["rows"]:
        if r.get("tflops") is None or r.get("timing") == "burst":
            continue
        key = ({"f16": "fp16"}.get(r["dtype"], r["dtype"]), r["head_dim_qk"], r["seqlen_q"],
               bool(r["causal"]))
        out[key] = r["tflops"]
    return out


def harness_rows(path):
    out = {}
    with open(path) as f:
        doc = json.load(f)
    for r in doc["rows"]:
        m = r["impls"].get("portattn", {})
        if r.get("mode") == "prefill" and m.get("tflops"):
            out[(r["dtype"], r["d"], r["s"], bool(r["causal"]))] = m["tflops"]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", nargs="+", required=True, help="portattn-bench --json files, one per round")
    ap.add_argument("--harness", nargs="+", required=True, help="peer_bench.py --json files, one per round")
    ap.add_argument("--tol", type=float, default=0.03)
    a = ap.parse_args(argv)
    bench = [bench_rows(p) for p in a.bench]
    harness = [harness_rows(p) for p in a.harness]
    keys = sorted(set.intersection(*(set(d) for d in bench + harness)))
    if not keys:
        print("protocol_check: no shape in common")
        return 1
    print("| dtype | d | seqlen | causal | portattn-bench TFLOPS (rounds) | harness TFLOPS (rounds) | "
          "bench / harness |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for k in keys:
        b = [d[k] for d in bench]
        h = [d[k] for d in harness]
        r = statistics.median(b) / statistics.median(h)
        worst = max(worst, abs(r - 1))
        print("| %s | %d | %d | %s | %.1f (%s) | %.1f (%s) | %.3f |" % (
            k[0], k[1], k[2], "yes" if k[3] else "no", statistics.median(b), ", ".join("%.1f" % x for x in b),
            statistics.median(h), ", ".join("%.1f" % x for x in h), r))
    print("largest difference %.1f%% (limit %.0f%%)" % (100 * worst, 100 * a.tol))
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
