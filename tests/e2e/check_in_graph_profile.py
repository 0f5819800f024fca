#!/usr/bin/env python3
"""Checks a `yoloc profile --in-graph --json` result of a CUDA artifact (run on the GPU machine by
scripts/gpu_checks.sh profile): every launch has its increment, the graph cut after the last launch
times what the whole network graph does (both replayed back to back: the cut graphs are built as
the network's is), and no increment is more negative than replay noise. Exit 1 with the reason
otherwise."""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("json", help="profile --in-graph --json output")
    ap.add_argument("--tolerance", type=float, default=0.05,
                    help="allowed relative gap between the last cut and the whole graph")
    ap.add_argument("--noise-ms", type=float, default=0.005,
                    help="most negative increment accepted (replay noise)")
    a = ap.parse_args()
    d = json.load(open(a.json))
    totals = d.get("in_graph") or {}
    kernels = d.get("kernels", [])
    problems = []
    if not kernels or any("in_graph_added_ms" not in k for k in kernels):
        problems.append("a launch has no in_graph_added_ms")
    last, whole = totals.get("last_prefix_ms", 0.0), totals.get("network_queued_ms", 0.0)
    if whole <= 0 or abs(last - whole) > a.tolerance * whole:
        problems.append(f"last cut {last:.4f} ms vs whole graph {whole:.4f} ms")
    added = [k.get("in_graph_added_ms", 0.0) for k in kernels]
    if added and min(added) < -a.noise_ms:
        problems.append(f"an increment of {min(added):.4f} ms")
    if added and abs(sum(added) - last) > 1e-6 + 1e-3 * last:
        problems.append(f"increments sum to {sum(added):.4f} ms, not the last cut's {last:.4f}")
    top = sorted(kernels, key=lambda k: -k.get("in_graph_added_ms", 0.0))[:3]
    print(f"{a.json}: {len(kernels)} launches, last cut {last:.4f} ms, whole graph {whole:.4f} ms; "
          "largest increments: " + ", ".join(
              f"launch {k['call']} {1000 * k['in_graph_added_ms']:.1f} us" for k in top))
    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
