#!/usr/bin/env python3
"""Markdown sweep tables from tachyon-bench JSON lines.

    python3 scripts/perf_table.py bench/results/<gpu>-<date>.jsonl [--ops rms_norm_fwd,layer_norm_fwd]

One table per (op, dtype): rows are shapes; columns GB/s (or TFLOP/s), ratio to the
same-run limit (copy bandwidth or cuBLASLt), and the strongest peer figure with our ratio to it.
The last record of each (op, dtype, shape) wins, so appending a re-run updates the table.
"""
import argparse
import json
from collections import OrderedDict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--ops", default="")
    args = ap.parse_args()
    wanted = set(filter(None, args.ops.split(",")))
    rows = OrderedDict()
    meta = {}
    for f in args.files:
        for line in open(f):
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if "shape" not in r:  # a bench_peers.py record (the reference files hold both)
                continue
            if wanted and r["op"] not in wanted:
                continue
            rows[(r["op"], r["dtype"], r["shape"])] = r
            meta = {"gpu": r.get("gpu"), "date": r.get("date"), "commit": r.get("commit")}
    tables = OrderedDict()
    for (op, dt, shape), r in rows.items():
        tables.setdefault((op, dt), []).append(r)
    print(f"_{meta.get('gpu')}, {meta.get('date')}, commit {meta.get('commit')}_\n")
    for (op, dt), rs in tables.items():
        flops = "tflops" in rs[0]
        unit = "TFLOP/s" if flops else "GB/s"
        limit = "× cuBLASLt" if flops else "× copy"
        print(f"**{op} {dt}**\n")
        print(f"| shape | {unit} | {limit} | peer | × peer |")
        print("| --- | --- | --- | --- | --- |")
        for r in rs:
            v = r["tflops"] if flops else r["gbps"]
            peer = f'{r["peer"]} {r["peer_value"]:.0f}' if r.get("peer") else ""
            xpeer = f'{v / r["peer_value"]:.2f}' if r.get("peer_value") else ""
            print(f'| {r["shape"]} | {v:.0f} | {r["ratio"]:.3f} | {peer} | {xpeer} |')
        print()


if __name__ == "__main__":
    main()
