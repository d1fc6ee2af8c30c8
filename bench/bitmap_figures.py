#!/usr/bin/env python3
"""Figures of tandem-bench-bitmap-build's JSON, as Fusco et al. 2013 plot them: Figure 5, records/s
against cardinality (log-log) for WAH and PLWAH on the GPU and the CPU builder, one panel per
distribution and column length; Figure 6, the time of each step of one GPU build, stacked per codec.

Needs Debian's python3-matplotlib.

    bench/bitmap_figures.py bench/results/bitmap_build.json --png bench/results/bitmap_build.png

The JSON is tandem-bench-*'s own, or a results file of bench/results/ (the run of --machine KIND,
by default the newest).
"""
import sys

import figures

STEPS = ["upload", "sort", "literals", "merge", "fills", "fuse", "offsets", "download"]


def main():
    args = figures.parse_args(__doc__)
    data, run = figures.read(args)
    if run is not None:
        data = dict(run, machine={"gpu": run.get("gpu"), "commit": run.get("commit")})
    points = data.get("points", [])
    if not points:
        print("bitmap_figures.py: no points in the JSON", file=sys.stderr)
        return 1
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(p["distribution"], p["records"]) for p in points},
                    key=lambda k: (k[1], k[0] != "uniform"))
    steps = data.get("steps", [])
    fig, axes = plt.subplots(1, len(panels) + (1 if steps else 0),
                             figsize=(4.2 * (len(panels) + 1), 3.8), squeeze=False)
    for ax, (distribution, records) in zip(axes[0], panels):
        for codec in ("wah", "plwah"):
            rows = sorted((p for p in points if p["distribution"] == distribution and
                           p["records"] == records and p["codec"] == codec),
                          key=lambda p: p["cardinality"])
            if not rows:
                continue
            x = [p["cardinality"] for p in rows]
            ax.plot(x, [p["gpu_records_per_second"] for p in rows], "o-", label=f"{codec.upper()} GPU")
            ax.plot(x, [p["cpu_records_per_second"] for p in rows], "s--", label=f"{codec.upper()} CPU")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("cardinality")
        ax.set_ylabel("records/s")
        ax.set_title(f"{distribution}, {records / 1e6:.0f}M records (Figure 5)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if steps:
        ax = axes[0][-1]
        bottom = [0.0] * len(steps)
        for step in STEPS:
            values = [s.get(step + "_ms", 0) for s in steps]
            ax.bar([s["codec"].upper() for s in steps], values, bottom=bottom, label=step)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_ylabel("ms")
        ax.set_title("steps of one build (Figure 6)")
        ax.legend(fontsize=7)
    machine = data.get("machine", {})
    fig.suptitle(f"bitmap index build, {machine.get('gpu', '?')}, commit {machine.get('commit', '?')}",
                 fontsize=9)
    figures.save(fig, args.png, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
