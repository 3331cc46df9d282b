#!/usr/bin/env python3
"""Side-by-side table of portattn-bench rows and PyTorch SDPA peer rows (anchors/sdpa.py) measured in
the same device call, as Markdown with ratios.

  tools/compare_peers.py BENCH.json PEERS.json [--title T] > table.md

PEERS may be sdpa.py's --json file or its stdout (one JSON object per line)."""
import argparse, json, sys

def load_peers(path):
    text = open(path).read()
    try:
        return json.loads(text)["prefill"]
    except (ValueError, KeyError):
        return [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench"); ap.add_argument("peers"); ap.add_argument("--title", default="")
    a = ap.parse_args()
    bench = json.load(open(a.bench))
    peers = {(p["dtype"], p["d"], p["s"], bool(p["causal"])): p for p in load_peers(a.peers)}
    if a.title:
        print(f"### {a.title}\n")
    print(f"Device: {bench.get('device', '?')}. TFLOPS by the FlashAttention convention "
          "(4·B·H·S²·D, halved when causal); FA2 = PyTorch FLASH, cuDNN = PyTorch CUDNN_ATTENTION.\n")
    print("| dtype | d | seqlen | causal | portattn kernel | portattn | FA2 | cuDNN | vs FA2 | vs cuDNN |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in bench["rows"]:
        key = (r["dtype"], r["head_dim_qk"], r["seqlen_q"], bool(r["causal"]))
        p = peers.get(key, {})
        fa, cu, ours = p.get("flash_tflops"), p.get("cudnn_tflops"), r.get("tflops")
        ratio = lambda x: f"{ours / x:.3f}x" if ours and x else "-"
        fmt = lambda x: f"{x:.1f}" if x else "-"
        print(f"| {r['dtype']} | {key[1]} | {key[2]} | {'yes' if key[3] else 'no'} | {r['kernel']} | "
              f"{fmt(ours)} | {fmt(fa)} | {fmt(cu)} | {ratio(fa)} | {ratio(cu)} |")

if __name__ == "__main__":
    sys.exit(main())
