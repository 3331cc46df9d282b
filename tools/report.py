#!/usr/bin/env python3
"""Turns benchmark results from one or more machines into a Markdown summary and charts.

  tools/report.py RESULT.json [RESULT.json ...] --out DIR [--title T]

Inputs (any mix, any number of machines):
  - portattn-bench --json files (format 1 and 2);
  - PyTorch SDPA peer files from shared/anchors/sdpa.py: its --json file ({"device", "prefill": [...]}
    or {"device", "decode": [...]}; row keys flash_tflops/cudnn_tflops or flash/cudnn, decode
    flash_us/cudnn_us) or its stdout (one JSON row a line; it names no device, so it takes --device or
    the device of the input given just before it);
  - rows or whole files with "estimate": true (static estimates, e.g. for AMD parts not measured
    yet): shown in their own columns labelled "static estimate", never mixed with measurements.

Writes DIR/summary.md (per device: portattn beside FA2 and cuDNN with ratios and % of the device peak
from tools/devices.json; across devices: the same shapes side by side), DIR/rows.csv (every input
row, normalised), and per chart DIR/NAME.dat + DIR/NAME.gp, rendered by gnuplot to NAME.svg (and
NAME.png when gnuplot has the pngcairo or png terminal): prefill TFLOPS vs seqlen, one chart per
(dtype, head dim, causal), one line per backend/peer/device; decode effective KV TB/s vs KV length,
one chart per batch. Without gnuplot the Markdown, .dat and .gp files are still written
(`gnuplot NAME.gp` renders one later; `gnuplot -e 'fmt="png"' NAME.gp` the PNG).

Python 3 standard library only. `report.py --self-test` checks itself on synthetic inputs.
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = {"flash": "FA2", "cudnn": "cuDNN", "efficient": "SDPA mem-efficient"}
DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
          "f16": "fp16", "fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16",
          "f32": "fp32", "fp32": "fp32", "float32": "fp32", "float": "fp32", "torch.float32": "fp32"}
DTYPE_ORDER = {"bf16": 0, "fp16": 1, "fp32": 2}
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
GNUPLOT_MISSING = "gnuplot not found: apt-get install gnuplot-nox; charts skipped"


class InputError(Exception):
    pass


# ---- the device table (tools/devices.json, shared with portattn-bench) ---------------------------

class Devices:
    def __init__(self, path, prefer_measured=True):
        self.path, self.prefer_measured, self.entries = path, prefer_measured, []
        if path and os.path.exists(path):
            with open(path) as f:
                self.entries = json.load(f).get("devices", [])

    def entry(self, name):
        """The table entry whose match strings occur in `name` (ignoring case) and exclude ones do not."""
        low = (name or "").lower()
        for e in self.entries:
            if any(m.lower() in low for m in e.get("match", [])) and \
               not any(x.lower() in low for x in e.get("exclude", [])):
                return e
        return None

    def short(self, name):
        """Short device name: the table's (e.g. "H200"), else the name without a "(sm_90, ...)" tail."""
        e = self.entry(name)
        if e:
            return e["name"]
        return re.sub(r"\s*\(.*\)\s*$", "", name or "").strip() or "unknown device"

    def peak(self, name, metric, other=False):
        """(value, kind, date) of the preferred peak (other: of the other kind), or None."""
        e = self.entry(name)
        if not e:
            return None
        peaks = [p for p in e.get("peaks", []) if p.get("metric") == metric]
        order = ["measured", "datasheet"] if self.prefer_measured else ["datasheet", "measured"]
        peaks.sort(key=lambda p: order.index(p.get("kind")) if p.get("kind") in order else 9)
        if other:
            peaks = [p for p in peaks[1:] if p.get("kind") != peaks[0].get("kind")]
        return (peaks[0]["value"], peaks[0].get("kind", "?"), peaks[0].get("date", "")) if peaks else None


def metric_of(rec):
    return "hbm_TBps" if rec["mode"] == "decode" else rec["dtype"] + "_tflops"


# ---- reading inputs ---------------------------------------------------------------------------

def num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def read_json_or_lines(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        rows = []
        for i, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise InputError(f"{path}:{i}: not JSON: {e}")
        if not rows:
            raise InputError(f"{path}: neither a JSON document nor JSON lines")
        return rows


def base(path, device, estimate):
    return {"file": os.path.basename(path), "device_raw": device, "estimate": bool(estimate), "extra": "",
            "opts": "", "kernel": "", "backend": "", "check": "", "tflops": None, "time_us": None,
            "kv_TBps": None}


def from_bench(path, doc):
    """portattn-bench --json rows."""
    out = []
    for r in doc.get("rows", []):
        est = bool(r.get("estimate", doc.get("estimate", False)))
        rec = base(path, doc.get("device"), est)
        dtype = DTYPES.get(str(r.get("dtype")), str(r.get("dtype")))
        sq, sk = int(r["seqlen_q"]), int(r.get("seqlen_k", r["seqlen_q"]))
        varlen = bool(r.get("varlen"))
        mode = r.get("mode") or ("decode" if sq == 1 and not varlen else "prefill")
        extra = []
        wl, wr = r.get("window_left", -1), r.get("window_right", -1)
        if (wl is not None and wl >= 0) or (wr is not None and wr >= 0):
            extra.append(f"window({wl},{wr})")
        if r.get("softcap"):
            extra.append(f"softcap={r['softcap']:g}")
        if varlen:
            extra.append("varlen")
        opts = [o for o, on in (("lse", r.get("lse")), ("bhsd", r.get("layout") == "bhsd")) if on]
        backend = r.get("backend") or "?"
        ms = num(r.get("time_ms", r.get("ms")))
        us = num(r.get("time_us")) or (ms * 1e3 if ms is not None else None)
        d = int(r["head_dim_qk"])
        dv = int(r.get("head_dim_v", d))
        hkv = int(r.get("heads_kv", r["heads_q"]))
        kv = num(r.get("kv_bytes_per_s"))
        if kv is None and mode == "decode" and us:
            kvb = num(r.get("kv_bytes")) or \
                float(r.get("tokens_k", int(r["batch"]) * sk)) * hkv * (d + dv) * DTYPE_BYTES.get(dtype, 2)
            kv = kvb / (us * 1e-6)
        rec.update(source="portattn", backend=backend, kernel=r.get("kernel") or "", mode=mode, dtype=dtype,
                   d=d, dv=dv, b=int(r["batch"]), sq=sq, sk=sk, hq=int(r["heads_q"]), hkv=hkv,
                   causal=bool(r.get("causal")), extra=" ".join(extra), opts=" ".join(opts),
                   tflops=num(r.get("tflops")), time_us=us, kv_TBps=kv / 1e12 if kv else None,
                   check=r.get("check") or "")
        rec["series"] = "portattn " + backend + (" " + rec["opts"] if rec["opts"] else "")
        out.append(rec)
    return out


def from_sdpa(path, doc, rows, device):
    """sdpa.py rows: prefill (d, h, b, s, causal, <peer>_tflops or <peer>) or decode (b, skv, hq, hk, d,
    <peer>_us, <peer>_kv_TBps or <peer>_TBps)."""
    out = []
    est_file = bool(doc.get("estimate", False)) if isinstance(doc, dict) else False
    for r in rows:
        decode = "skv" in r
        dtype = DTYPES.get(str(r.get("dtype", "bf16")), str(r.get("dtype", "bf16")))
        for key, label in PEERS.items():
            rec = base(path, device, r.get("estimate", est_file))
            rec.update(source=label, backend=key, series=label, dtype=dtype)
            if decode:
                us = num(r.get(key + "_us"))
                tbps = num(r.get(key + "_kv_TBps", r.get(key + "_TBps")))
                d, b, skv, hk = int(r["d"]), int(r["b"]), int(r["skv"]), int(r["hk"])
                if tbps is None and us:
                    tbps = 2.0 * b * hk * skv * d * DTYPE_BYTES.get(dtype, 2) / (us * 1e-6) / 1e12
                if us is None and tbps is None:
                    continue
                rec.update(mode="decode", d=d, dv=d, b=b, sq=1, sk=skv, hq=int(r["hq"]), hkv=hk, causal=False,
                           time_us=us, kv_TBps=tbps)
            else:
                tf = num(r.get(key + "_tflops", r.get(key)))
                if tf is None:
                    continue
                s, h = int(r["s"]), int(r["h"])
                rec.update(mode="prefill", d=int(r["d"]), dv=int(r["d"]), b=int(r["b"]), sq=s, sk=s, hq=h,
                           hkv=h, causal=bool(r.get("causal")), tflops=tf)
            out.append(rec)
    return out


def from_peer_bench(path, doc):
    """tools/peer_bench.py --json: each row holds portattn's runs and the peers' (labels FA2, cuDNN),
    measured in one process with one protocol."""
    label_key = {label: key for key, label in PEERS.items()}
    out = []
    for r in doc.get("rows", []):
        dtype = DTYPES.get(str(r.get("dtype", "bf16")), str(r.get("dtype", "bf16")))
        if r.get("mode") == "decode":
            d, b, skv, hq, hk = int(r["d"]), int(r["b"]), int(r["skv"]), int(r["hq"]), int(r["hk"])
            shape = dict(mode="decode", d=d, dv=d, b=b, sq=1, sk=skv, hq=hq, hkv=hk, causal=False)
        else:
            s, h = int(r["s"]), int(r["h"])
            shape = dict(mode="prefill", d=int(r["d"]), dv=int(r["d"]), b=int(r["b"]), sq=s, sk=s, hq=h, hkv=h,
                         causal=bool(r.get("causal")))
        for label, m in r.get("impls", {}).items():
            ms = num(m.get("ms"))
            if ms is None:
                continue
            rec = base(path, doc.get("device"), False)
            rec.update(shape, dtype=dtype, time_us=ms * 1e3, tflops=num(m.get("tflops")), kv_TBps=num(m.get("kv_TBps")))
            if label.startswith("portattn"):
                backend = m.get("backend") or "?"
                rec.update(source="portattn", backend=backend, kernel=m.get("kernel") or "", check=m.get("check") or "",
                           series="portattn " + backend)
            elif label in label_key:
                rec.update(source=label, backend=label_key[label], series=label)
            else:
                continue
            out.append(rec)
    return out


def load(path, fallback_device):
    """The normalised records of one input file and its device (None when the file names none)."""
    doc = read_json_or_lines(path)
    try:
        if isinstance(doc, dict) and doc.get("tool") == "peer_bench":
            return from_peer_bench(path, doc), doc.get("device")
        if isinstance(doc, dict) and (doc.get("tool") == "portattn-bench" or "rows" in doc):
            return from_bench(path, doc), doc.get("device")
        if isinstance(doc, dict) and ("prefill" in doc or "decode" in doc):
            rows = list(doc.get("prefill") or []) + list(doc.get("decode") or [])
            return from_sdpa(path, doc, rows, doc.get("device") or fallback_device), doc.get("device")
        if isinstance(doc, list):
            return from_sdpa(path, {}, doc, fallback_device), None
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: unexpected row contents ({type(e).__name__}: {e})")
    raise InputError(f"{path}: not a portattn-bench or sdpa.py result")


def load_all(paths, device_opt, devices, warn, peer_labels):
    """All records. A file that names no device (sdpa.py stdout) takes --device, else the device of the
    nearest file before it on the command line (the bench file of the same run), else after it."""
    loaded = []
    for p in paths:
        recs, dev = load(p, device_opt)
        recs = [r for r in recs if r["source"] == "portattn" or r["source"] in peer_labels]
        loaded.append((p, recs, dev))
    for i, (p, recs, dev) in enumerate(loaded):
        if dev or device_opt:
            continue
        before = [d for _, _, d in loaded[:i] if d]
        after = [d for _, _, d in loaded[i + 1:] if d]
        guess = before[-1] if before else after[0] if after else "unknown device"
        warn(f"{os.path.basename(p)} names no device: taken as {devices.short(guess)}, the device of the "
             f"{'input before it' if before else 'input after it' if after else 'inputs (none named)'} "
             "(--device says otherwise)")
        for r in recs:
            r["device_raw"] = guess
    records, raw_of = [], {}
    for p, recs, dev in loaded:
        for r in recs:
            r["device"] = devices.short(r["device_raw"])
            raw_of.setdefault(r["device"], r["device_raw"])
            peak = devices.peak(r["device_raw"], metric_of(r)) or devices.peak(r["device"], metric_of(r))
            val = r["kv_TBps"] if r["mode"] == "decode" else r["tflops"]
            r["peak"] = peak
            r["frac"] = val / peak[0] if peak and val is not None else None
        records.extend(recs)
    # one value per (device, series, shape): later inputs override earlier ones
    kept, replaced = {}, {}
    for r in records:
        k = (r["device"], r["series"], r["estimate"], shape_key(r))
        if k in kept:
            pair = (kept[k]["file"], r["file"])
            replaced[pair] = replaced.get(pair, 0) + 1
        kept[k] = r
    for (old, new), n in replaced.items():
        warn(f"{n} rows of {old} are measured again in {new}, which replaces them (the last file wins: "
             "give the peers of the same run last)")
    return list(kept.values()), records, raw_of


# ---- shapes, series and cells -------------------------------------------------------------------

def shape_key(r):
    if r["mode"] == "decode":
        return ("decode", r["dtype"], r["d"], r["dv"], r["hq"], r["hkv"], r["b"], r["sk"], r["extra"])
    return ("prefill", r["dtype"], r["d"], r["dv"], r["hq"], r["hkv"], r["causal"], r["extra"], r["b"], r["sq"],
            r["sk"])


def shape_sort(k):
    """Table order: dtype, head dim, causal, flags, heads, then the lengths ascending."""
    if k[0] == "decode":
        _, dt, d, dv, hq, hkv, b, sk, extra = k
        return (1, DTYPE_ORDER.get(dt, 9), dt, d, dv, extra, hq, hkv, b, sk)
    _, dt, d, dv, hq, hkv, causal, extra, b, sq, sk = k
    return (0, DTYPE_ORDER.get(dt, 9), dt, d, dv, causal, extra, hq, hkv, sq, sk, b)


def group_sort(g):
    """Chart order: as the tables."""
    return (g[0] == "decode", DTYPE_ORDER.get(g[1], 9)) + tuple((0, x, "") if isinstance(x, (int, float)) else
                                                                (1, 0, str(x)) for x in g[1:])


def series_sort(name_est):
    """Measured before estimated; portattn first, then FA2, cuDNN, mem-efficient."""
    name, est = name_est
    if name.startswith("portattn"):
        rank = 0
    elif name in PEERS.values():
        rank = 1 + list(PEERS.values()).index(name)
    else:
        rank = 9
    return (est, rank, name)


def col_label(name, est):
    return f"{name} (static estimate)" if est else name


def fmt(x, digits=1):
    """Fixed decimals; two significant digits for values the decimals would round to 0 (a CPU row)."""
    if x is None:
        return "-"
    return f"{x:.2g}" if 0 < abs(x) < 10 ** -digits * 10 else f"{x:.{digits}f}"


def fmt_ratio(a, b):
    if a is None or not b:
        return "-"
    r = a / b
    return f"{r:.3f}x" if r < 1 else f"{r:.2f}x"


def fmt_pct(f):
    if f is None:
        return "-"
    p = 100 * f
    return f"{p:.2f}%" if p < 1 else f"{p:.1f}%" if p < 10 else f"{p:.0f}%"


def seq_label(x):
    return f"{x // 1024}k" if x >= 1024 and x % 1024 == 0 else str(x)


def value(r):
    return r["kv_TBps"] if r["mode"] == "decode" else r["tflops"]


# ---- Markdown ------------------------------------------------------------------------------------

def md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def peaks_line(devices, raw):
    parts = []
    for metric, unit in (("bf16_tflops", "TFLOPS"), ("fp16_tflops", "TFLOPS"), ("hbm_TBps", "TB/s")):
        p = devices.peak(raw, metric)
        if p:
            parts.append(f"{metric.split('_')[0]} {p[0]:g} {unit} ({p[1]}{' ' + p[2] if p[2] else ''})")
    return "; ".join(parts) if parts else "unknown device: no peaks, no percentages"


def device_tables(dev, recs, all_shapes):
    """Markdown of one device: prefill and decode, portattn series beside the peers. Shapes without a
    portattn row are left out (counted below the table) unless all_shapes, or the device has none."""
    out = []
    for mode in ("prefill", "decode"):
        rs = [r for r in recs if r["mode"] == mode]
        if not rs:
            continue
        series = sorted({(r["series"], r["estimate"]) for r in rs}, key=series_sort)
        ours = [s for s in series if s[0].startswith("portattn")]
        peers = [s for s in series if not s[0].startswith("portattn")]
        peer_main = [p for p in ("FA2", "cuDNN") if (p, False) in series]
        by = {}
        for r in rs:
            by.setdefault(shape_key(r), {})[(r["series"], r["estimate"])] = r
        keys = sorted(by, key=shape_sort)
        peer_only = [k for k in keys if not any(s in by[k] for s in ours)]
        if ours and not all_shapes:
            keys = [k for k in keys if k not in peer_only]
        has_extra = any(by[k][s]["extra"] for k in keys for s in by[k])
        if mode == "prefill":
            head = ["dtype", "d", "seqlen", "B", "H", "causal"] + (["flags"] if has_extra else [])
        else:
            head = ["dtype", "d", "B", "Hq/Hkv", "KV length"] + (["flags"] if has_extra else [])
        unit = "TFLOPS" if mode == "prefill" else "KV TB/s"
        for s in ours:
            lab = col_label(*s)
            head += [f"{lab} {unit}"] + (["us"] if mode == "decode" else []) + ["% peak"] + \
                [f"vs {p}" for p in peer_main]
        for s in peers:
            head += [f"{col_label(*s)} {unit}"] + (["us"] if mode == "decode" else []) + ["% peak"]
        rows = []
        for k in keys:
            cells = by[k]
            any_r = next(iter(cells.values()))
            if mode == "prefill":
                seq = str(any_r["sq"]) if any_r["sq"] == any_r["sk"] else f"{any_r['sq']}/{any_r['sk']}"
                h = str(any_r["hq"]) if any_r["hq"] == any_r["hkv"] else f"{any_r['hq']}/{any_r['hkv']}"
                row = [any_r["dtype"], any_r["d"] if any_r["d"] == any_r["dv"] else f"{any_r['d']}/{any_r['dv']}",
                       seq, any_r["b"], h, "yes" if any_r["causal"] else "no"]
            else:
                row = [any_r["dtype"], any_r["d"], any_r["b"], f"{any_r['hq']}/{any_r['hkv']}", any_r["sk"]]
            if has_extra:
                row.append(any_r["extra"] or "-")
            for s in ours + peers:
                r = cells.get(s)
                v = value(r) if r else None
                row.append(fmt(v, 1 if mode == "prefill" else 2))
                if mode == "decode":
                    row.append(fmt(r["time_us"] if r else None, 1))
                row.append(fmt_pct(r["frac"]) if r else "-")
                if s in ours:
                    for p in peer_main:
                        pr = cells.get((p, False))
                        row.append(fmt_ratio(v, value(pr) if pr else None))
            rows.append(row)
        title = "Prefill" if mode == "prefill" else "Decode (one query token)"
        out.append(f"### {dev}: {title}\n")
        out.append(md_table(head, rows))
        if ours and peer_only and not all_shapes:
            out.append(f"\n{len(peer_only)} shapes with peer rows only are left out here (they are in the charts "
                       "and rows.csv; `--all-shapes` lists them).\n")
        kernels = {}
        for r in rs:
            if r["source"] == "portattn" and r["kernel"]:
                kernels.setdefault(col_label(r["series"], r["estimate"]), set()).add(r["kernel"])
        if kernels:
            out.append("\nKernels: " + "; ".join(f"{s}: " + ", ".join(f"`{k}`" for k in sorted(v))
                                                 for s, v in sorted(kernels.items())) + ".\n")
        out.append("")
    return "\n".join(out)


def cross_tables(recs, devices_order):
    """The shapes measured (or estimated) on two or more devices, side by side."""
    out = []
    for mode in ("prefill", "decode"):
        rs = [r for r in recs if r["mode"] == mode]
        by = {}
        for r in rs:
            by.setdefault(shape_key(r), {})[(r["device"], r["series"], r["estimate"])] = r
        keys = sorted((k for k, v in by.items() if len({c[0] for c in v}) >= 2), key=shape_sort)
        if not keys:
            continue
        cols = sorted({c for k in keys for c in by[k]},
                      key=lambda c: (devices_order.index(c[0]), series_sort((c[1], c[2]))))
        unit = "TFLOPS" if mode == "prefill" else "KV TB/s"
        if mode == "prefill":
            head = ["dtype", "d", "seqlen", "B", "H", "causal"]
        else:
            head = ["dtype", "d", "B", "Hq/Hkv", "KV length"]
        head += [f"{c[0]} {col_label(c[1], c[2])}" for c in cols]
        rows = []
        for k in keys:
            r0 = next(iter(by[k].values()))
            if mode == "prefill":
                row = [r0["dtype"], r0["d"], r0["sq"] if r0["sq"] == r0["sk"] else f"{r0['sq']}/{r0['sk']}", r0["b"],
                       r0["hq"] if r0["hq"] == r0["hkv"] else f"{r0['hq']}/{r0['hkv']}", "yes" if r0["causal"] else "no"]
            else:
                row = [r0["dtype"], r0["d"], r0["b"], f"{r0['hq']}/{r0['hkv']}", r0["sk"]]
            for c in cols:
                r = by[k].get(c)
                v = value(r) if r else None
                row.append("-" if v is None else fmt(v, 1 if mode == "prefill" else 2) +
                           (f" ({fmt_pct(r['frac'])})" if r["frac"] is not None else ""))
            rows.append(row)
        out.append(f"### {'Prefill' if mode == 'prefill' else 'Decode'}, {unit} (% of each device's peak)\n")
        out.append(md_table(head, rows))
        out.append("")
    return "\n".join(out)


# ---- charts ----------------------------------------------------------------------------------------

COLORS = {"FA2": "#e07b00", "cuDNN": "#2a9d3a", "SDPA mem-efficient": "#8c564b"}
OURS = ["#1f5fbf", "#8e44ad", "#0f9fb5", "#c0392b", "#555555"]
DASH = [1, 2, 4, 5]   # by device: solid, dashed, dash-dot, long dash
POINTS = [7, 5, 9, 13, 11]  # by device: circle, square, triangle, diamond, inverted triangle
PEAK_GREY = ["#666666", "#aaaaaa"]  # the preferred peak, the other kind


def chart_groups(recs):
    """Prefill charts per (dtype, d, dv, causal, flags, heads, tokens); decode per (dtype, d, heads, batch)."""
    groups = {}
    for r in recs:
        if r["value"] is None:
            continue
        if r["mode"] == "prefill":
            if r["sq"] != r["sk"]:
                continue
            g = ("prefill", r["dtype"], r["d"], r["dv"], r["causal"], r["extra"], r["hq"], r["hkv"], r["b"] * r["sq"])
            x = r["sq"]
        else:
            g = ("decode", r["dtype"], r["d"], r["dv"], r["hq"], r["hkv"], r["extra"], r["b"])
            x = r["sk"]
        groups.setdefault(g, []).append((x, r))
    # a chart needs a line: two or more lengths in one series
    return {g: pts for g, pts in groups.items()
            if any(len({x for x, r in pts if (r["device"], r["series"], r["estimate"]) == s}) >= 2
                   for s in {(r["device"], r["series"], r["estimate"]) for _, r in pts})}


def chart_name(g, taken):
    if g[0] == "prefill":
        _, dt, d, dv, causal, extra, hq, hkv, tok = g
        name = f"prefill_{dt}_d{d}" + (f"_dv{dv}" if dv != d else "") + ("_causal" if causal else "_noncausal")
        alt = f"_h{hq}" + (f"kv{hkv}" if hkv != hq else "") + f"_tok{tok}"
    else:
        _, dt, d, dv, hq, hkv, extra, b = g
        name = f"decode_{dt}_d{d}" + (f"_dv{dv}" if dv != d else "") + f"_b{b}"
        alt = f"_h{hq}kv{hkv}"
    if extra:
        name += "_" + re.sub(r"[^A-Za-z0-9]+", "-", extra).strip("-")
    if name in taken:
        name += alt
    n, i = name, 2
    while n in taken:
        n, i = f"{name}_{i}", i + 1
    taken.add(n)
    return n


def gp_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def write_chart(outdir, name, g, pts, devices, raw_of, devices_order, peak_lines, logy):
    """NAME.dat (one block per line) and NAME.gp (renders NAME.svg, or NAME.png with -e 'fmt="png"')."""
    prefill = g[0] == "prefill"
    series = sorted({(r["device"], r["series"], r["estimate"]) for _, r in pts},
                    key=lambda s: (devices_order.index(s[0]), series_sort((s[1], s[2]))))
    xs = sorted({x for x, _ in pts})
    ours_names = sorted({s[1] for s in series if s[1].startswith("portattn")})
    with open(os.path.join(outdir, name + ".dat"), "w") as f:
        f.write(f"# {name}: x = {'sequence length' if prefill else 'KV length'}, "
                f"y = {'TFLOPS' if prefill else 'effective KV TB/s'}\n")
        for i, s in enumerate(series):
            f.write(f"{'' if i == 0 else chr(10) + chr(10)}# [{i}] {s[0]} {col_label(s[1], s[2])}\n")
            for x, r in sorted((x, r) for x, r in pts if (r["device"], r["series"], r["estimate"]) == s):
                f.write(f"{x} {r['value']:.6g}\n")
    if prefill:
        _, dt, d, dv, causal, extra, hq, hkv, tok = g
        heads = f"{hq} heads" if hq == hkv else f"{hq}/{hkv} heads (GQA)"
        title = (f"Attention forward, {dt}, head dim {d}{'/' + str(dv) if dv != d else ''}, "
                 f"{'causal' if causal else 'non-causal'}{', ' + extra if extra else ''}")
        sub = f"batch × seqlen = {tok} tokens, {heads}; FLOPs = 4·B·H·S²·D{' / 2' if causal else ''}"
        ylabel, xlabel = "TFLOPS (higher is better)", "sequence length (tokens, log2 scale)"
    else:
        _, dt, d, dv, hq, hkv, extra, b = g
        title = f"Decode (one query token), {dt}, batch {b}{', ' + extra if extra else ''}"
        sub = f"{hq} query heads / {hkv} KV heads, head dim {d}; bandwidth = bytes of K and V / time"
        ylabel, xlabel = "effective KV bandwidth (TB/s, higher is better)", "KV cache length (tokens, log2 scale)"
    lines = [
        f"# {name}: made by tools/report.py; `gnuplot {name}.gp` writes {name}.svg, "
        f"`gnuplot -e 'fmt=\"png\"' {name}.gp` writes {name}.png",
        'if (!exists("fmt")) fmt = "svg"',
        "set encoding utf8",
        'if (fmt eq "svg") set terminal svg size 1250,640 dynamic noenhanced font "Helvetica,14" background "#ffffff"',
        'if (fmt eq "png") set terminal pngcairo size 1400,720 noenhanced font "Helvetica,14" background "#ffffff"',
        'if (fmt eq "pnggd") set terminal png size 1400,720 noenhanced font "DejaVuSans,12" background "#ffffff"',
        f'set output "{name}." . (fmt eq "pnggd" ? "png" : fmt)',
        f"set title {gp_str(title + chr(10) + sub)}",
        f"set xlabel {gp_str(xlabel)}",
        f"set ylabel {gp_str(ylabel)}",
        "set logscale x 2",
        "set xtics (" + ", ".join(f'"{seq_label(x)}" {x}' for x in xs) + ")",
        f"set xrange [{xs[0] / 1.25:g}:{xs[-1] * 1.25:g}]",
        "set logscale y 10" if logy else "set yrange [0:*]",
        "set grid ytics lc rgb '#dddddd' lt 1",
        "set border 3",
        "set tics nomirror",
        "set key outside right top vertical Left reverse samplen 3 spacing 1.15 width 2 box lc rgb '#cccccc'",
        "set offsets 0, 0, 0, 0" if logy else "set offsets 0, 0, graph 0.08, 0",
    ]
    plots = []
    for i, s in enumerate(series):
        dev, ser, est = s
        di = devices_order.index(dev)
        if ser in ours_names:
            color = OURS[ours_names.index(ser) % len(OURS)]
        else:
            color = COLORS.get(ser, "#333333")
        dash = 3 if est else DASH[di % len(DASH)]
        pt = POINTS[di % len(POINTS)] - (1 if est else 0)  # open symbol for estimates
        label = f"{dev} {col_label(ser, est)}"
        plots.append(f"'{name}.dat' index {i} using 1:2 with linespoints lw 2.5 lc rgb '{color}' dt {dash} "
                     f"pt {pt} ps 1.2 title {gp_str(label)}")
    if peak_lines:  # one device: its peak labelled on the line (and the other kind, lighter); several: in the key
        metric = (g[1] + "_tflops") if prefill else "hbm_TBps"
        unit, what = ("TFLOPS", f"{g[1]} tensor peak") if prefill else ("TB/s", "HBM peak")
        devs = sorted({s[0] for s in series}, key=devices_order.index)
        for dev in devs:
            raw, di = raw_of.get(dev, dev), devices_order.index(dev)
            first = devices.peak(raw, metric)
            other = devices.peak(raw, metric, other=True) if len(devs) == 1 else None
            for p, grey, dt in ((first, PEAK_GREY[0], 2 if len(devs) == 1 else DASH[di % len(DASH)]),
                                (other, PEAK_GREY[1], 3)):
                if not p:
                    continue
                text = f"{dev} {what} {p[0]:g} {unit} ({p[1]})"
                if len(devs) == 1:
                    lines.append(f"set label {gp_str(text)} at graph 0.01, first {p[0]:g} offset 0, 0.7 left "
                                 f"tc rgb '{grey}' font ',12'")
                plots.append(f"{p[0]:g} with lines lw 1.5 dt {dt} lc rgb '{grey}' "
                             + ("notitle" if len(devs) == 1 else f"title {gp_str(text)}"))
    lines.append("plot " + ", \\\n     ".join(plots))
    with open(os.path.join(outdir, name + ".gp"), "w") as f:
        f.write("\n".join(lines) + "\n")


def gnuplot_formats(gp):
    """The output formats this gnuplot can write, of svg, png (cairo) and pnggd (libgd)."""
    fmts = []
    for fmt, term in (("svg", "svg"), ("png", "pngcairo"), ("pnggd", "png")):
        try:
            ok = subprocess.run([gp, "-e", f"set terminal {term}"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            fmts.append(fmt)
    if "png" in fmts and "pnggd" in fmts:
        fmts.remove("pnggd")
    return fmts


def render(outdir, names, warn):
    gp = shutil.which("gnuplot")
    if not gp:
        print(GNUPLOT_MISSING, file=sys.stderr)
        return {}
    fmts = gnuplot_formats(gp)
    made = {}
    for name in names:
        for fmt in fmts:
            res = subprocess.run([gp, "-e", f'fmt="{fmt}"', name + ".gp"], cwd=outdir, capture_output=True,
                                 text=True, timeout=120)
            ext = "png" if fmt == "pnggd" else fmt
            if res.returncode == 0 and os.path.exists(os.path.join(outdir, f"{name}.{ext}")):
                made.setdefault(name, []).append(ext)
            else:
                warn(f"gnuplot failed on {name}.gp ({fmt}): {res.stderr.strip()[-300:]}")
    if "png" not in fmts and "pnggd" not in fmts:
        warn("this gnuplot has neither the pngcairo nor the png terminal: SVG only")
    return made


# ---- main ------------------------------------------------------------------------------------------

def report(paths, outdir, title="portattn benchmark report", device=None, devices_path=None,
           prefer_measured=True, charts=True, peak_lines=True, peers=("flash", "cudnn"), warn=None,
           all_shapes=False, logy=False):
    notes = []
    warn = warn or (lambda m: (notes.append(m), print("report.py: " + m, file=sys.stderr)))
    devices = Devices(devices_path or os.path.join(HERE, "devices.json"), prefer_measured)
    if not devices.entries:
        warn(f"no device table at {devices.path}: no percentages of peak")
    recs, all_recs, raw_of = load_all(paths, device, devices, warn, {PEERS[p] for p in peers})
    if not recs:
        raise InputError("no rows in the inputs")
    for r in recs:
        r["value"] = value(r)
    os.makedirs(outdir, exist_ok=True)
    order = []
    for r in recs:  # devices in input order
        if r["device"] not in order:
            order.append(r["device"])

    # charts
    taken, chart_list = set(), []
    for g, pts in sorted(chart_groups(recs).items(), key=lambda kv: group_sort(kv[0])):
        name = chart_name(g, taken)
        write_chart(outdir, name, g, pts, devices, raw_of, order, peak_lines, logy)
        chart_list.append((name, g))
    made = render(outdir, [n for n, _ in chart_list], warn) if charts and chart_list else {}
    if charts and chart_list and not shutil.which("gnuplot"):
        notes.append(GNUPLOT_MISSING)

    # rows.csv: every row, normalised
    cols = ["device", "device_raw", "file", "series", "estimate", "mode", "dtype", "d", "dv", "b", "sq", "sk", "hq",
            "hkv", "causal", "extra", "opts", "kernel", "tflops", "time_us", "kv_TBps", "peak_name", "peak_value",
            "peak_kind", "peak_fraction", "check"]
    with open(os.path.join(outdir, "rows.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in sorted(recs, key=lambda r: (order.index(r["device"]), shape_sort(shape_key(r)), r["series"])):
            p = r["peak"]
            w.writerow([r["device"], r["device_raw"], r["file"], r["series"], int(r["estimate"]), r["mode"], r["dtype"],
                        r["d"], r["dv"], r["b"], r["sq"], r["sk"], r["hq"], r["hkv"], int(r["causal"]), r["extra"],
                        r["opts"], r["kernel"], r["tflops"], r["time_us"], r["kv_TBps"], metric_of(r),
                        p[0] if p else "", p[1] if p else "", r["frac"] if r["frac"] is not None else "", r["check"]])

    # summary.md
    md = [f"# {title}\n", f"Made {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `tools/report.py` from:\n"]
    files, used = {}, {}
    for r in all_recs:
        files.setdefault(r["file"], [r["device_raw"], set(), 0])
        files[r["file"]][1].add(col_label(r["series"], r["estimate"]))
        files[r["file"]][2] += 1
    for r in recs:
        used[r["file"]] = used.get(r["file"], 0) + 1
    md.append(md_table(["file", "device", "series", "rows", "rows used"],
                       [[f"`{f}`", v[0], ", ".join(sorted(v[1])), v[2], used.get(f, 0)] for f, v in files.items()]))
    md.append("\nPrefill throughput is TFLOPS by the FlashAttention convention (4·B·H·Sq·Sk·D, halved when causal); "
              "decode (one query token) is the effective KV bandwidth, bytes of K and V / time. "
              "FA2 = PyTorch SDPA FLASH_ATTENTION (FlashAttention-2), cuDNN = SDPA CUDNN_ATTENTION, timed with "
              "`triton.testing.do_bench` (by `tools/peer_bench.py`, in the same process as portattn, or by older "
              "`sdpa.py` files). \"vs FA2\" = portattn throughput / FA2 throughput on the "
              "same device (above 1x: portattn is faster). \"% peak\" = fraction of the device peak of "
              f"`{os.path.relpath(devices.path, outdir) if devices.entries else 'no table'}` (prefill: the dtype's "
              "dense tensor TFLOPS; decode: HBM bandwidth); \"measured\" peaks are ours, \"datasheet\" ones the "
              "vendor's. Columns marked \"static estimate\" are estimates, not measurements. Ratios are only "
              "meaningful within one run of one machine.\n")
    md.append("## Devices\n")
    md.append(md_table(["device", "reported as", "peaks used for % peak"],
                       [[d, raw_of.get(d, d), peaks_line(devices, raw_of.get(d, d))] for d in order]))
    md.append("")
    for dev in order:
        md.append(f"## {dev}\n")
        md.append(device_tables(dev, [r for r in recs if r["device"] == dev], all_shapes))
    if len(order) > 1:
        md.append("## Across devices\n")
        cross = cross_tables(recs, order)
        md.append(cross if cross.strip() else "No shape was run on more than one device.\n")
    md.append("## Charts\n")
    if not chart_list:
        md.append("No series has two or more lengths of one shape family: no charts.\n")
    for name, g in chart_list:
        exts = made.get(name, [])
        shown = "png" if "png" in exts else "svg" if "svg" in exts else None
        if shown:
            md.append(f"![{name}]({name}.{shown})\n")
            md.append(" · ".join(f"[{e.upper()}]({name}.{e})" for e in exts) + f" · data [{name}.dat]({name}.dat)\n")
        else:
            md.append(f"- `{name}.gp` / `{name}.dat` (not rendered: run `gnuplot {name}.gp` in this folder)\n")
    over = sorted({(r["device"], metric_of(r), r["peak"][0], r["peak"][1]) for r in recs
                   if r["frac"] is not None and r["frac"] > 1})
    for dev, metric, val, kind in over:
        why = ("a measured figure is not a hard ceiling: e.g. a device-to-device copy mixes reads and writes, "
               "a read-only KV scan can go faster" if kind == "measured" else "check the table and the measurement")
        warn(f"some {dev} rows exceed 100% of its {metric} peak {val:g} ({kind}): {why}")
    if notes:
        md.append("## Notes\n")
        md.extend(f"- {n}" for n in notes)
        md.append("")
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    return {"records": recs, "charts": chart_list, "made": made, "devices": order}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", help="portattn-bench --json files and sdpa.py --json/stdout files")
    ap.add_argument("--out", help="output folder (created)")
    ap.add_argument("--title", default="portattn benchmark report")
    ap.add_argument("--device", help="device of inputs that name none (sdpa.py stdout); default: the device "
                    "of the nearest input before it on the command line")
    ap.add_argument("--devices", help="device table (default: devices.json beside this script)")
    ap.add_argument("--peak", choices=["measured", "datasheet"], default="measured",
                    help="which peak to prefer where the table has both (default measured)")
    ap.add_argument("--peers", default="flash,cudnn",
                    help="sdpa.py backends to show, of flash,cudnn,efficient (default flash,cudnn)")
    ap.add_argument("--no-charts", action="store_true", help="write .dat/.gp but do not run gnuplot")
    ap.add_argument("--no-peak-lines", action="store_true", help="leave the device peaks out of the charts")
    ap.add_argument("--logy", action="store_true", help="log y axis (for series far apart, e.g. a fallback kernel)")
    ap.add_argument("--all-shapes", action="store_true",
                    help="per-device tables also list shapes that have peer rows only")
    ap.add_argument("--self-test", action="store_true", help="check this script on synthetic inputs and exit")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.inputs or not a.out:
        ap.error("give one or more RESULT.json files and --out DIR")
    peers = [p.strip() for p in a.peers.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad:
        ap.error(f"unknown peer(s) {', '.join(bad)} (flash, cudnn, efficient)")
    try:
        res = report(a.inputs, a.out, a.title, a.device, a.devices, a.peak == "measured", not a.no_charts,
                     not a.no_peak_lines, peers, all_shapes=a.all_shapes, logy=a.logy)
    except (InputError, OSError) as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    n = sum(len(v) for v in res["made"].values())
    print(f"report.py: {len(res['records'])} rows from {len(a.inputs)} files, {len(res['devices'])} device(s) "
          f"({', '.join(res['devices'])}), {len(res['charts'])} charts ({n} images) -> "
          f"{os.path.join(a.out, 'summary.md')}")
    return 0


# ---- self-test -------------------------------------------------------------------------------------

def self_test():
    """Synthetic inputs of every supported format, two measured devices and one estimated one."""
    tmp = tempfile.mkdtemp(prefix="portattn-report-")
    seqs, failures = [512, 1024, 2048, 4096], []

    def bench_rows(dev_scale):
        rows = []
        for causal in (False, True):
            for s in seqs:
                tf = dev_scale * (100 + s / 100) * (0.8 if causal else 1)
                rows.append({"mode": "prefill", "dtype": "bf16", "backend": "cuda-sm90", "kernel": "fa3<bf16,128>",
                             "batch": 16384 // s, "seqlen_q": s, "seqlen_k": s, "heads_q": 16, "heads_kv": 16,
                             "head_dim_qk": 128, "head_dim_v": 128, "causal": causal, "window_left": -1,
                             "window_right": -1, "softcap": 0, "varlen": False, "lse": False, "layout": "bshd",
                             "time_ms": 1.0, "tflops": tf, "check": "none"})
        for b in (1, 8):
            for kv in (4096, 16384):
                us = 10 + b * kv / 1000 / dev_scale
                rows.append({"mode": "decode", "dtype": "bf16", "backend": "cuda-sm90", "kernel": "decode<bf16>",
                             "batch": b, "seqlen_q": 1, "seqlen_k": kv, "tokens_k": b * kv, "heads_q": 32,
                             "heads_kv": 8, "head_dim_qk": 128, "head_dim_v": 128, "causal": False,
                             "time_us": us, "time_ms": us / 1e3, "tflops": 1.0,
                             "kv_bytes": b * kv * 8 * 256 * 2.0, "check": "pass"})
        return rows

    def peers_rows(dev_scale, anchor_style):
        pre, dec = [], []
        for causal in (False, True):
            for s in seqs:
                fa, cu = dev_scale * 300, dev_scale * 500
                if anchor_style:
                    pre.append({"dtype": "bfloat16", "d": 128, "h": 16, "b": 16384 // s, "s": s, "causal": causal,
                                "flash": fa, "cudnn": cu, "efficient": 100.0})
                else:
                    pre.append({"dtype": "bf16", "d": 128, "h": 16, "b": 16384 // s, "s": s, "causal": causal,
                                "flash_tflops": fa, "cudnn_tflops": cu, "efficient_tflops": None})
        for b in (1, 8):
            for kv in (4096, 16384):
                us = 20 + b * kv / 1000 / dev_scale
                tb = 2 * b * 8 * kv * 128 * 2 / (us * 1e-6) / 1e12
                key = "_TBps" if anchor_style else "_kv_TBps"
                dec.append({"b": b, "skv": kv, "hq": 32, "hk": 8, "d": 128, "flash_us": us, "flash" + key: tb,
                            "cudnn_us": us / 2, "cudnn" + key: None if anchor_style else 2 * tb, "efficient_us": None})
        return pre, dec

    def dump(name, obj, lines=False):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            if lines:
                f.write("\n".join(json.dumps(r) for r in obj) + "\n")
            else:
                json.dump(obj, f)
        return path

    h_pre, h_dec = peers_rows(1.0, anchor_style=True)
    b_pre, b_dec = peers_rows(2.0, anchor_style=False)
    inputs = [
        dump("h200-bench.json", {"tool": "portattn-bench", "format": 2, "device": "NVIDIA H200 (sm_90, 132 SMs)",
                                 "rows": bench_rows(1.0)}),
        dump("h200-anchor.json", {"device": "NVIDIA H200", "prefill": h_pre, "decode": h_dec}),
        dump("b200-bench.json", {"tool": "portattn-bench", "device": "NVIDIA B200 (sm_100, 148 SMs)",
                                 "rows": bench_rows(2.0)}),
        dump("b200-peers.json", {"device": "NVIDIA B200", "prefill": b_pre}),
        dump("b200-peers-decode.jsonl", b_dec, lines=True),
        dump("mi300x-estimate.json", {"tool": "portattn-bench", "device": "AMD Instinct MI300X", "estimate": True,
                                      "rows": [dict(r, backend="hip-cdna") for r in bench_rows(1.5)]}),
        dump("unknown-bench.json", {"tool": "portattn-bench", "device": "Some Future GPU",
                                    "rows": bench_rows(3.0)[:2]}),
    ]
    out = os.path.join(tmp, "out")
    notes = []
    try:
        res = report(inputs, out, device=None, warn=notes.append)
    except Exception as e:  # noqa: BLE001 - the test reports any failure
        print(f"self-test: report() raised {type(e).__name__}: {e}")
        return 1
    md = open(os.path.join(out, "summary.md")).read()

    def check(cond, what):
        if not cond:
            failures.append(what)

    check(res["devices"] == ["H200", "B200", "MI300X", "Some Future GPU"], f"devices {res['devices']}")
    check("| H200 | NVIDIA H200 (sm_90, 132 SMs) | bf16 693.6 TFLOPS (measured 2026-11-29)" in md,
          "H200 measured peak in the devices table")
    check("portattn hip-cdna (static estimate) TFLOPS" in md, "estimate column labelled")
    check("## Across devices" in md and "MI300X portattn hip-cdna (static estimate)" in md, "cross-device table")
    # H200 non-causal s=4096: ours 100+40.96 = 140.96, FA2 300, cuDNN 500 -> 0.470x, 0.282x; % of 693.6 = 20%
    check("| bf16 | 128 | 4096 | 4 | 16 | no | 141.0 | 20% | 0.470x | 0.282x | 300.0 | 43% | 500.0 | 72% |" in md,
          "H200 prefill row with ratios and % peak")
    # sdpa.py stdout names no device: it takes the device of the file before it (B200)
    check(any("b200-peers-decode.jsonl names no device: taken as B200" in n for n in notes), "device-less file note")
    check(any(r["device"] == "B200" and r["file"] == "b200-peers-decode.jsonl" for r in res["records"]),
          "device-less file: the device of the input before it")
    check(any(r["device"] == "Some Future GPU" and r["frac"] is None for r in res["records"]),
          "unknown device: no percentage")
    names = [n for n, _ in res["charts"]]
    for want in ("prefill_bf16_d128_noncausal", "prefill_bf16_d128_causal", "decode_bf16_d128_b1", "decode_bf16_d128_b8"):
        check(want in names, f"chart {want}")
        check(os.path.exists(os.path.join(out, want + ".gp")) and os.path.exists(os.path.join(out, want + ".dat")),
              f"{want}.gp/.dat written")
    if shutil.which("gnuplot"):
        check("svg" in res["made"].get("prefill_bf16_d128_causal", []), "SVG rendered")
        check(not any("gnuplot failed" in n for n in notes), "gnuplot ran without errors")
    else:
        check(not res["made"], "no images without gnuplot")
    gp = open(os.path.join(out, "prefill_bf16_d128_causal.gp")).read()
    check("logscale x 2" in gp and "H200 bf16 tensor peak 693.6 TFLOPS (measured)" in gp, "chart axis and peak line")
    # the thin wrapper's table (compare_peers.py) from the same loader
    rows = compare_table(inputs[0], inputs[1])
    check(any("| bf16 | 128 | 4096 | no | fa3<bf16,128> | 141.0 | 300.0 | 500.0 | 0.470x | 0.282x |" in l for l in rows),
          "compare_peers table")
    # sdpa.py --decode stdout with --device
    res2 = report([inputs[4]], os.path.join(tmp, "out2"), device="NVIDIA B200", charts=False, warn=notes.append)
    check(res2["devices"] == ["B200"] and all(r["frac"] is not None for r in res2["records"]), "--device for JSON lines")
    # tools/peer_bench.py: portattn and both peers from one file, one process
    pb = {"tool": "peer_bench", "format": 1, "device": "NVIDIA H200", "rows": [
        {"mode": "prefill", "dtype": "bf16", "d": 128, "s": 4096, "b": 4, "h": 16, "causal": False, "impls": {
            "FA2": {"ms": 1.0, "tflops": 300.0}, "cuDNN": {"ms": 0.6, "tflops": 500.0},
            "portattn": {"ms": 0.5, "tflops": 600.0, "backend": "cuda-sm90", "kernel": "sm90<bf16,d128>", "check": "PASS"},
            "portattn[cuda-sm80]": {"error": "declined"}}},
        {"mode": "decode", "dtype": "bf16", "d": 128, "b": 8, "skv": 16384, "hq": 32, "hk": 8, "causal": False,
         "impls": {"cuDNN": {"ms": 0.14, "kv_TBps": 4.0}, "portattn": {"ms": 0.13, "kv_TBps": 4.3, "backend": "cuda-sm80"}}}]}
    dump("h200-peer-bench.json", pb)
    res3 = report([os.path.join(tmp, "h200-peer-bench.json")], os.path.join(tmp, "out3"), charts=False,
                  warn=notes.append)
    got = sorted((r["mode"], r["series"], r["tflops"] or r["kv_TBps"]) for r in res3["records"])
    check(got == [("decode", "cuDNN", 4.0), ("decode", "portattn cuda-sm80", 4.3), ("prefill", "FA2", 300.0),
                  ("prefill", "cuDNN", 500.0), ("prefill", "portattn cuda-sm90", 600.0)], f"peer_bench rows {got}")
    if failures:
        print("self-test FAILED:\n  " + "\n  ".join(failures) + f"\n  (outputs in {tmp})")
        return 1
    print(f"self-test passed ({len(res['records'])} rows, {len(names)} charts, {sum(map(len, res['made'].values()))} "
          f"images; outputs in {tmp})")
    return 0


# ---- the table of tools/compare_peers.py (kept for scripts/device-run.sh and results/) -------------

def compare_table(bench_path, peers_path, title=""):
    """Markdown lines: the portattn-bench prefill rows of bench_path beside the sdpa.py peers of peers_path."""
    bench = read_json_or_lines(bench_path)
    recs, _ = load(peers_path, bench.get("device"))
    peers = {}
    for r in recs:
        if r["mode"] == "prefill":
            peers.setdefault((r["dtype"], r["d"], r["sq"], r["causal"]), {})[r["source"]] = r["tflops"]
    out = [f"### {title}\n"] if title else []
    out.append(f"Device: {bench.get('device', '?')}. TFLOPS by the FlashAttention convention "
               "(4·B·H·S²·D, halved when causal); FA2 = PyTorch FLASH, cuDNN = PyTorch CUDNN_ATTENTION.\n")
    out.append("| dtype | d | seqlen | causal | portattn kernel | portattn | FA2 | cuDNN | vs FA2 | vs cuDNN |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in from_bench(bench_path, bench):
        if r["mode"] != "prefill":
            continue
        p = peers.get((r["dtype"], r["d"], r["sq"], r["causal"]), {})
        fa, cu, ours = p.get("FA2"), p.get("cuDNN"), r["tflops"]
        ratio = lambda x: f"{ours / x:.3f}x" if ours and x else "-"  # noqa: E731
        f1 = lambda x: f"{x:.1f}" if x else "-"  # noqa: E731
        dtype = "f16" if r["dtype"] == "fp16" else "f32" if r["dtype"] == "fp32" else r["dtype"]  # portattn's names
        out.append(f"| {dtype} | {r['d']} | {r['sq']} | {'yes' if r['causal'] else 'no'} | {r['kernel']} | "
                   f"{f1(ours)} | {f1(fa)} | {f1(cu)} | {ratio(fa)} | {ratio(cu)} |")
    return out


if __name__ == "__main__":
    sys.exit(main())
