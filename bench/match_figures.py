#!/usr/bin/env python3
"""Figures of tandem-bench-match's JSON: one panel per sweep of Margara & Cugola's section 5
(Figures 6-11: attributes per event, constraints per filter, filters per interface, interfaces,
names, numeric share), each with the time per event at batch 1 of CCM and of the CPU matcher on one
thread (left axis, log scale) and CCM's speedup (right axis), as the paper plots them; and a table
of the default scenario, the Zipf point and the text point in Markdown.

Needs Debian's python3-matplotlib for the PNG.

    bench/match_figures.py bench/results/match.json --png bench/results/match.png

The JSON is tandem-bench-*'s own, or a results file of bench/results/ (the run of --machine KIND,
by default the newest).
"""
import sys

import figures

SWEEPS = [
    ("attributes", "attributes per event (Figure 6)"),
    ("constraints", "constraints per filter (Figure 7)"),
    ("filters", "filters per interface (Figure 8)"),
    ("interfaces", "interfaces (Figure 9)"),
    ("names", "attribute names (Figure 10)"),
    ("numeric", "numeric constraints, % (Figure 11)"),
]


def main():
    args = figures.parse_args(__doc__)
    data, run = figures.read(args)
    if run is not None:
        # match.json keeps the sweeps beside the callers sweep; a run merged whole has its points.
        data = dict(run.get("sweeps", run), machine={"gpu": run.get("gpu")})
    points = data.get("points", [])
    if not any("ccm" in p for p in points):
        print("match_figures.py: no CCM figures in the JSON (run on a GPU machine)", file=sys.stderr)
        return 1
    plt = figures.pyplot("match_figures.py")
    if plt is None:
        return 1
    sweeps = [(s, title) for s, title in SWEEPS if any(p["sweep"] == s for p in points)]
    cols = 3
    rows = max(1, (len(sweeps) + cols - 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(sweeps):]:
        ax.axis("off")
    for ax, (sweep, title) in zip(axes.flat, sweeps):
        pts = [p for p in points if p["sweep"] == sweep and "ccm" in p]
        x = [float(p["point"]) for p in pts]
        ccm = [p["ccm"]["latency_us"]["mean"] for p in pts]
        cpu = [p["cpu_1_thread"]["latency_us"]["mean"] for p in pts]
        ax.plot(x, ccm, "o-", label="CCM (GPU)")
        ax.plot(x, cpu, "s-", label="CPU matcher, 1 thread")
        ax.set_yscale("log")
        ax.set_xlabel(title)
        ax.set_ylabel("µs per event (batch 1)")
        if sweep in ("filters", "names"):
            ax.set_xscale("log")
        ax2 = ax.twinx()
        ax2.plot(x, [c / g for c, g in zip(cpu, ccm)], "d--", color="gray", label="speedup")
        ax2.set_ylabel("speedup (CPU / CCM)")
        ax2.set_ylim(bottom=0)
        lines = ax.get_lines() + ax2.get_lines()
        ax.legend(lines, [l.get_label() for l in lines], fontsize=8, loc="upper left")
    gpu = data.get("machine", {}).get("gpu", "?")
    fig.suptitle(f"Standing queries: CCM against the CPU matcher ({gpu})")
    figures.save(fig, args.png, dpi=100)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
