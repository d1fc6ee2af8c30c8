#!/usr/bin/python3
"""Figure 7 of Ding et al. 2009 from tandem-loadgen sweeps: latency against Poisson arrival rate for
CPU only, GPU only, CPU+GPU one query at a time, and the hybrid scheduler.

Reads DIR/{mode}_{config}_{rate}.json (tandem-loadgen --json-out, one open-loop row each, written
by bench/figure7.sh on the GPU machine) or DIR/{mode}_{config}.json (a whole --rates sweep) and writes one JSON with every row and, per mode and
configuration, the highest arrival rate sustained with no query over the deadline (every query
answered OK within it, the achieved rate within 5% of the offered one), and a PNG of mean and p99
latency against arrival rate. Needs Debian's python3-matplotlib for the PNG (run with
/usr/bin/python3).

  /usr/bin/python3 bench/figure7.py --in /tmp/fig7 --json bench/results/figure7_h100.json \
      --png bench/results/figure7_h100.png
"""
import argparse
import glob
import json
import os
import sys

CONFIGS = [
    ("cpu", "CPU only (16 cores)"),
    ("gpu", "GPU only"),
    ("serial", "CPU+GPU, one query at a time"),
    ("hybrid", "CPU+GPU hybrid scheduler"),
]
MODES = ["and", "or"]


def sustained(rows, deadline_ms):
    """Highest offered rate of a row with every query OK within the deadline."""
    best = 0.0
    for row in rows:
        counts = row["status_counts"]
        errors = sum(n for status, n in counts.items() if status != "OK")
        ok = counts.get("OK", 0)
        if (ok > 0 and errors == 0 and row["latency_ms"]["max"] <= deadline_ms
                and row["achieved_qps"] >= 0.95 * row["offered_qps"]):
            best = max(best, row["rate"])
    return best


def Sustained(qps, deadline_ms):
    if qps <= 0:
        return f"a query over {deadline_ms:.0f} ms at every rate"
    return f"≤{deadline_ms:.0f} ms up to {qps:.0f} q/s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in", dest="indir", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--png", required=True)
    parser.add_argument("--deadline-ms", type=float, default=500.0)
    args = parser.parse_args()

    result = {"deadline_ms": args.deadline_ms, "modes": {}}
    model_path = os.path.join(args.indir, "cost_model.json")
    if os.path.exists(model_path):  # tandem-train-cost's output: machine, GPU, prediction errors
        with open(model_path) as f:
            model = json.load(f)
        result["machine"] = model.get("machine")
        result["cost_model"] = {
            engine: {key: figures.get(key) for key in
                     ("train_samples", "eval_samples", "rules", "mean_relative_error",
                      "heuristic_mean_relative_error", "by_mode")}
            for engine, figures in model.get("engines", {}).items()}
    for mode in MODES:
        per_mode = {}
        for config, label in CONFIGS:
            # One file per rate (bench/figure7.sh) or one sweep file.
            paths = sorted(glob.glob(os.path.join(args.indir, f"{mode}_{config}_*.json")) +
                           glob.glob(os.path.join(args.indir, f"{mode}_{config}.json")))
            if not paths:
                continue
            rows = []
            for path in paths:
                with open(path) as f:
                    run = json.load(f)
                rows.extend(run["rows"])
            rows.sort(key=lambda r: r["rate"])
            per_mode[config] = {
                "label": label,
                "sustained_qps": sustained(rows, args.deadline_ms),
                "rows": [{
                    "rate": r["rate"],
                    "achieved_qps": r["achieved_qps"],
                    "status_counts": r["status_counts"],
                    "latency_ms": r["latency_ms"],
                } for r in rows],
            }
        if not per_mode:
            continue
        singles = [per_mode[c]["sustained_qps"] for c in ("cpu", "gpu") if c in per_mode]
        best_single = max(singles) if singles else 0.0
        if "hybrid" in per_mode and best_single > 0:
            per_mode["hybrid_over_best_single"] = per_mode["hybrid"]["sustained_qps"] / best_single
        result["modes"][mode] = per_mode

    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    for mode, per_mode in result["modes"].items():
        for config, _ in CONFIGS:
            if config in per_mode:
                print(f"{mode:4} {config:7} sustained {per_mode[config]['sustained_qps']:9.0f} q/s")
        if "hybrid_over_best_single" in per_mode:
            print(f"{mode:4} hybrid / best single processor: {per_mode['hybrid_over_best_single']:.2f}x")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("figure7.py: matplotlib missing (apt install python3-matplotlib); no PNG",
              file=sys.stderr)
        return 1
    modes = list(result["modes"])
    if not modes:
        print(f"figure7.py: no sweeps under {args.indir}", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(modes), 2, figsize=(12, 4.5 * len(modes)), squeeze=False)
    for i, mode in enumerate(modes):
        per_mode = result["modes"][mode]
        for j, (stat, title) in enumerate([("mean", "average"), ("p99", "99th percentile")]):
            ax = axes[i][j]
            for config, label in CONFIGS:
                if config not in per_mode:
                    continue
                rows = [r for r in per_mode[config]["rows"] if r["status_counts"].get("OK", 0) > 0]
                ax.plot([r["rate"] for r in rows], [r["latency_ms"][stat] for r in rows],
                        marker="o", markersize=3,
                        label=f"{label} ({Sustained(per_mode[config]['sustained_qps'], args.deadline_ms)})")
            ax.axhline(args.deadline_ms, color="grey", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("arrival rate (queries/s, Poisson)")
            ax.set_ylabel(f"{title} latency (ms)")
            ax.set_title(f"{mode.upper()} top-10, {title} latency")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Tandem on the 25M-document GOV2-like index, TREC 2005 evaluation queries "
                 "(after Ding et al. 2009, Figure 7)")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.json} and {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
