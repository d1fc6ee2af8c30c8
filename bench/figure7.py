#!/usr/bin/python3
"""Figure 7 of Ding et al. 2009 from tandem-loadgen sweeps: latency against Poisson arrival rate for
CPU only, GPU only, CPU+GPU one query at a time, and the hybrid scheduler.

Reads DIR/{mode}_{config}_{rate}.json (tandem-loadgen --json-out, one open-loop row each, written
by bench/figure7.sh on the GPU machine) or DIR/{mode}_{config}.json (a whole --rates sweep), for
every configuration found (cpu, gpu, serial, hybrid and their variants, e.g. hybrid8-g8-blocking),
and writes one JSON with every row and, per mode and configuration, the highest arrival rate sustained with no query over the deadline (every query
answered OK within it, the achieved rate within 5% of the offered one), and a PNG of mean and p99
latency against arrival rate. --record KIND stores the JSON in bench/results/figure7.json as
runs.KIND (bench/results_store.py). Needs Debian's python3-matplotlib for the PNG (run with
/usr/bin/python3).

  /usr/bin/python3 bench/figure7.py --in /tmp/fig7 --record h100 --png bench/results/figure7.png
"""
import argparse
import glob
import json
import os
import re
import sys

import figures

BASES = {
    "cpu": "CPU only",
    "gpu": "GPU only",
    "serial": "CPU+GPU, one query at a time",
    "hybrid": "CPU+GPU hybrid scheduler",
}
# NAME[N][-gM][-pP][-WAIT] as bench/figure7.sh names its configurations (hybrid8-g8-blocking,
# hybrid-p4: GPU workers on CPUs 0-3, CPU workers on the others).
CONFIG_RE = re.compile(
    r"^(cpu|gpu|serial|hybrid)(\d*)(?:-g(\d+))?(?:-p(\d+))?(?:-(auto|spin|yield|blocking))?$")
FILE_RE = re.compile(r"^(and|or)_(.+?)(?:_\d+(?:\.\d+)?)?\.json$")
MODES = ["and", "or"]


def config_key(config):
    m = CONFIG_RE.match(config)
    return (list(BASES).index(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0),
            int(m.group(4) or 0), m.group(5) or "")


def config_label(config):
    base, n, g, p, wait = CONFIG_RE.match(config).groups()
    details = []
    if base == "cpu":
        details.append(f"{n or 16} cores")
    elif base == "hybrid" and n:
        details.append(f"{n} CPU workers")
    if g:
        details.append(f"{g} on the GPU")
    if p:
        details.append(f"GPU workers on {p} CPUs, CPU workers on the rest")
    if wait:
        details.append(f"{wait} wait")
    return BASES[base] + (f" ({', '.join(details)})" if details else "")


def discover(indir):
    """The configurations with sweep files under indir, per mode, in a stable order."""
    found = {mode: set() for mode in MODES}
    for path in glob.glob(os.path.join(indir, "*.json")):
        m = FILE_RE.match(os.path.basename(path))
        if m and CONFIG_RE.match(m.group(2)):
            found[m.group(1)].add(m.group(2))
    return {mode: sorted(configs, key=config_key) for mode, configs in found.items()}


def sustained(rows, deadline_ms, p99_ms=None):
    """Highest offered rate of a row with every query OK within the deadline (and, with p99_ms,
    a 99th percentile at or below it)."""
    best = 0.0
    for row in rows:
        counts = row["status_counts"]
        errors = sum(n for status, n in counts.items() if status != "OK")
        ok = counts.get("OK", 0)
        if (ok > 0 and errors == 0 and row["latency_ms"]["max"] <= deadline_ms
                and row["achieved_qps"] >= 0.95 * row["offered_qps"]
                and (p99_ms is None or row["latency_ms"]["p99"] <= p99_ms)):
            best = max(best, row["rate"])
    return best


def Sustained(qps, deadline_ms):
    if qps <= 0:
        return f"a query over {deadline_ms:.0f} ms at every rate"
    return f"≤{deadline_ms:.0f} ms up to {qps:.0f} q/s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in", dest="indir", required=True)
    parser.add_argument("--json", help="write the summary here")
    parser.add_argument("--record", metavar="KIND",
                        help="store the summary in bench/results/figure7.json as runs.KIND")
    parser.add_argument("--png", required=True)
    parser.add_argument("--deadline-ms", type=float, default=500.0)
    parser.add_argument("--p99-ms", type=float, default=50.0,
                        help="a p99 latency bound at the sustained rate")
    args = parser.parse_args()
    if not args.json and not args.record:
        parser.error("give --json FILE, --record KIND, or both")

    result = {"deadline_ms": args.deadline_ms, "p99_ms": args.p99_ms, "modes": {}}
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
    configs = discover(args.indir)
    for mode in MODES:
        per_mode = {}
        for config in configs[mode]:
            label = config_label(config)
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
                "sustained_p99_qps": sustained(rows, args.deadline_ms, args.p99_ms),
                "rows": [{
                    "rate": r["rate"],
                    "achieved_qps": r["achieved_qps"],
                    "status_counts": r["status_counts"],
                    "latency_ms": r["latency_ms"],
                } for r in rows],
            }
        if not per_mode:
            continue
        # The best single processor over every CPU-only and GPU-only variant, against the best
        # hybrid variant.
        def best(prefix, key):
            named = [(per_mode[c][key], c) for c in configs[mode]
                     if CONFIG_RE.match(c).group(1) == prefix]
            return max(named) if named else (0.0, None)
        # Then the same with the p99 bound on every row counted ("p99 under 50 ms").
        for key, suffix in (("sustained_qps", ""), ("sustained_p99_qps", "_p99")):
            single = max(best("cpu", key), best("gpu", key))
            hybrid = best("hybrid", key)
            if hybrid[1] is not None and single[0] > 0:
                per_mode["best_single" + suffix] = {"config": single[1], "sustained_qps": single[0]}
                per_mode["best_hybrid" + suffix] = {"config": hybrid[1], "sustained_qps": hybrid[0]}
                per_mode["hybrid_over_best_single" + suffix] = hybrid[0] / single[0]
        result["modes"][mode] = per_mode

    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if args.record:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import results_store
        results_store.merge("figure7", args.record, result, produced_by="`bench/figure7.sh`",
                            protocol=f"tandem-loadgen sweeps from {args.indir}, deadline "
                                     f"{args.deadline_ms:.0f} ms, p99 bound {args.p99_ms:.0f} ms")
        results_store.regenerate_readme()
    for mode, per_mode in result["modes"].items():
        for config in configs[mode]:
            print(f"{mode:4} {config:20} sustained {per_mode[config]['sustained_qps']:9.0f} q/s, "
                  f"with p99 <= {args.p99_ms:.0f} ms {per_mode[config]['sustained_p99_qps']:9.0f} q/s")
        if "hybrid_over_best_single" in per_mode:
            print(f"{mode:4} best hybrid ({per_mode['best_hybrid']['config']}) / best single "
                  f"processor ({per_mode['best_single']['config']}): "
                  f"{per_mode['hybrid_over_best_single']:.2f}x")
        if "hybrid_over_best_single_p99" in per_mode:
            print(f"{mode:4} with p99 <= {args.p99_ms:.0f} ms: best hybrid "
                  f"({per_mode['best_hybrid_p99']['config']}) / best single processor "
                  f"({per_mode['best_single_p99']['config']}): "
                  f"{per_mode['hybrid_over_best_single_p99']:.2f}x")

    plt = figures.pyplot("figure7.py")
    if plt is None:
        return 1
    modes = list(result["modes"])
    if not modes:
        print(f"figure7.py: no sweeps under {args.indir}", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(modes), 2, figsize=(13, 6.2 * len(modes)), squeeze=False)
    for i, mode in enumerate(modes):
        per_mode = result["modes"][mode]
        for j, (stat, title) in enumerate([("mean", "average"), ("p99", "99th percentile")]):
            ax = axes[i][j]
            for config in configs[mode]:
                label = per_mode[config]["label"]
                rows = [r for r in per_mode[config]["rows"] if r["status_counts"].get("OK", 0) > 0]
                ax.plot([r["rate"] for r in rows], [r["latency_ms"][stat] for r in rows],
                        marker="o", markersize=3,
                        label=f"{label} ({Sustained(per_mode[config]['sustained_qps'], args.deadline_ms)})")
            ax.axhline(args.deadline_ms, color="grey", linestyle=":", linewidth=1)
            if stat == "p99":
                ax.axhline(args.p99_ms, color="grey", linestyle="--", linewidth=1)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("arrival rate (queries/s, Poisson)")
            ax.set_ylabel(f"{title} latency (ms)")
            ax.set_title(f"{mode.upper()} top-10, {title} latency")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1,
                      frameon=False)
    fig.suptitle("Tandem on the 25M-document GOV2-like index, TREC 2005 evaluation queries "
                 "(after Ding et al. 2009, Figure 7)")
    figures.save(fig, args.png, dpi=110)
    print(f"wrote {args.json or 'bench/results/figure7.json'} and {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
