#!/usr/bin/env python3
"""Side-by-side table of portattn-bench rows and PyTorch SDPA peer rows (anchors/sdpa.py) measured in
the same device call, as Markdown with ratios.

  tools/compare_peers.py BENCH.json PEERS.json [--title T] > table.md

PEERS may be sdpa.py's --json file or its stdout (one JSON object per line). A thin wrapper over
tools/report.py (same readers; report.py also makes charts, decode tables and cross-device reports)."""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in tools/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (tools/report.py)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench"); ap.add_argument("peers"); ap.add_argument("--title", default="")
    a = ap.parse_args()
    try:
        print("\n".join(report.compare_table(a.bench, a.peers, a.title)))
    except (report.InputError, OSError, ValueError, KeyError) as e:
        print(f"compare_peers.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
