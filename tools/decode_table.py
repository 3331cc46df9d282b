#!/usr/bin/env python3
"""Decode latency table: portattn-bench decode rows (one or more --json files, each a series) beside
the PyTorch SDPA peers of tools/peer_bench.py --sweep decode (or an sdpa.py --decode file), measured
in the same device call, as Markdown.

  tools/decode_table.py LABEL=BENCH.json [LABEL=BENCH.json ...] --peers PEERS.json [--copy-tbps X]

Each series gets its latency (us), effective KV bandwidth (TB/s: bytes of K and V / time) and the
latency ratio to cuDNN (< 1 is faster). --copy-tbps: the measured device-to-device copy bandwidth
(read + write bytes / time), so the table also gives each series' bandwidth as a fraction of it."""
import argparse
import json
import sys


def bench_rows(path):
    with open(path) as f:
        doc = json.load(f)
    rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
    out = {}
    for r in rows:
        if r.get("mode") != "decode" or r.get("time_us") is None and r.get("ms") is None:
            continue
        us = r.get("time_us") if r.get("time_us") is not None else r["ms"] * 1e3
        key = (int(r["batch"]), int(r["seqlen_k"]))
        out[key] = dict(us=us, tbps=(r.get("kv_bytes_per_s") or 0) * 1e-12, kernel=r.get("kernel", ""),
                        host=r.get("host_us_per_call"))
    return out


def peer_rows(path):
    """{(batch, KV tokens): {"cudnn_us", "flash_us"}} from peer_bench.py's rows or sdpa.py's "decode" list."""
    with open(path) as f:
        doc = json.load(f)
    if doc.get("tool") != "peer_bench":
        return {(int(r["b"]), int(r["skv"])): r for r in doc.get("decode", [])}
    out = {}
    for r in doc.get("rows", []):
        if r.get("mode") != "decode":
            continue
        us = {k: round(m["ms"] * 1e3, 1) for k, m in r.get("impls", {}).items() if m.get("ms") is not None}
        out[(int(r["b"]), int(r["skv"]))] = {"cudnn_us": us.get("cuDNN"), "flash_us": us.get("FA2")}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("series", nargs="+", help="LABEL=bench.json")
    ap.add_argument("--peers", required=True)
    ap.add_argument("--copy-tbps", type=float, default=0)
    a = ap.parse_args()
    try:
        series = [(s.split("=", 1)[0], bench_rows(s.split("=", 1)[1])) for s in a.series]
        peers = peer_rows(a.peers)
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"decode_table.py: {e}", file=sys.stderr)
        return 1
    head = "| b | KV | cuDNN us | FA2 us |"
    sep = "|---|---|---|---|"
    for label, _ in series:
        head += f" {label} us | TB/s |" + (" of copy |" if a.copy_tbps else "") + " vs cuDNN |"
        sep += "---|---|" + ("---|" if a.copy_tbps else "") + "---|"
    print(head)
    print(sep)
    keys = sorted(set(k for _, rows in series for k in rows) | set(peers))
    for k in keys:
        p = peers.get(k, {})
        cud, fa = p.get("cudnn_us"), p.get("flash_us")
        line = f"| {k[0]} | {k[1] // 1024}k | {cud if cud else '-'} | {fa if fa else '-'} |"
        for _, rows in series:
            r = rows.get(k)
            if not r:
                line += " - | - |" + (" - |" if a.copy_tbps else "") + " - |"
                continue
            line += f" {r['us']:.1f} | {r['tbps']:.2f} |"
            if a.copy_tbps:
                line += f" {100 * r['tbps'] / a.copy_tbps:.0f}% |"
            line += f" {r['us'] / cud:.2f}x |" if cud else " - |"
        print(line)
    kernels = sorted(set(r["kernel"] for _, rows in series for r in rows.values()))
    print("\nkernels: " + ", ".join(kernels))
    hosts = [r["host"] for _, rows in series for r in rows.values() if r.get("host") is not None]
    if hosts:
        print(f"host time inside one portattn_forward call: {min(hosts):.1f} .. {max(hosts):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
