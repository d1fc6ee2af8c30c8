#!/usr/bin/python3
"""Keeps bench/results/ as data: one JSON per benchmark, holding the newest run per machine kind.

  bench/results_store.py merge --benchmark NAME --machine KIND [--part PART] FILE
      [--headline TEXT] [--protocol TEXT] [--produced-by TEXT] [--title TEXT]
      [--machine-desc TEXT] [--gpu NAME|none] [--commit C] [--date D] [--no-readme]

FILE is what a benchmark wrote (tandem-bench-* --json, bench/*.py --out). merge stores it as
runs.KIND of bench/results/NAME.json, replacing the run there (with --part, only runs.KIND.parts.PART,
for a run recorded in pieces), and regenerates bench/results/README.md. Every run carries machine,
gpu (null for a CPU-only benchmark), commit, date and protocol: taken from the options, else from
FILE (its "machine" object as tandem-bench-* write it, "commit", "tandem_commit", "date"), else the
benchmark's protocol; merge refuses a run without them. KIND is a short machine kind (dev, h100,
h200, h100x2, h200x2, h200x4); names such as nvidia-h100-x2 are accepted and shortened.

A run's headline (one short figure for the results README) is --headline, else computed for the
benchmarks whose scripts merge their own runs (HEADLINES below), else left out.
"""
import argparse
import datetime
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.environ.get("TANDEM_RESULTS_DIR", os.path.join(HERE, "results"))  # tests set it
REQUIRED = ("machine", "gpu", "commit", "date", "protocol")

# The machine kinds, in the order the README lists them.
KINDS = {
    "dev": "development machine: a 2-core x86-64 VM (Intel Xeon or AMD EPYC), no GPU; its CPU "
           "figures are ratios only",
    "h100": "one NVIDIA H100 80GB HBM3 (driver 580.159) with 16 Intel Xeon cores",
    "h200": "one NVIDIA H200 (driver 580.159) with 16 Intel Xeon cores at 2.1 GHz",
    "h100x2": "two NVIDIA H100 80GB HBM3 in one host with 32 cores",
    "h200x2": "two NVIDIA H200 in one host with 32 cores",
    "h200x4": "four NVIDIA H200 in one host with 64 cores",
}


def kind_key(name):
    """dev, h100, h200, h100x2, ... from a short kind or a name such as nvidia-h100-x2."""
    m = re.fullmatch(r"(?:nvidia-)?(h100|h200)(?:-?x(\d+))?", name.strip().lower())
    if m:
        return m.group(1) + (f"x{m.group(2)}" if m.group(2) and m.group(2) != "1" else "")
    if name in KINDS:
        return name
    raise ValueError(f"unknown machine kind '{name}' (one of {', '.join(KINDS)})")


def path_of(benchmark):
    return os.path.join(RESULTS, f"{benchmark}.json")


def load(benchmark):
    path = path_of(benchmark)
    if not os.path.exists(path):
        return {"benchmark": benchmark, "runs": {}}
    with open(path) as f:
        return json.load(f)


def save(data):
    """Writes bench/results/BENCHMARK.json with the runs in KINDS order."""
    runs = data.get("runs", {})
    data["runs"] = {k: runs[k] for k in sorted(runs, key=lambda k: list(KINDS).index(k)
                                               if k in KINDS else len(KINDS))}
    with open(path_of(data["benchmark"]), "w") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")


def missing_fields(run):
    return [k for k in REQUIRED if k not in run or (run[k] in (None, "") and k != "gpu")]


def run_fields(content, kind, protocol=None, machine=None, gpu=None, commit=None, date=None):
    """The required fields of a run, from the options first, then from a benchmark's own JSON."""
    m = content.get("machine") if isinstance(content, dict) else None
    context = content.get("context", {}) if isinstance(content, dict) else {}
    if machine is None:
        if isinstance(m, dict) and m.get("cpu"):
            machine = f"{m['cpu']}, {m.get('cores', '?')} cores"
        elif isinstance(m, str):
            machine = m
        else:
            machine = KINDS.get(kind)
    if gpu is None:
        g = m.get("gpu") if isinstance(m, dict) else None
        gpu = None if not g or str(g).startswith("none") else g
    elif gpu == "none":
        gpu = None
    if commit is None and isinstance(content, dict):
        commit = (content.get("commit") or content.get("tandem_commit") or context.get("commit")
                  or (m.get("commit") if isinstance(m, dict) else None))
    if date is None and isinstance(content, dict):
        date = (content.get("date") or context.get("date")
                or (m.get("time") if isinstance(m, dict) else None))
    return {"machine": machine, "gpu": gpu, "commit": commit, "date": date, "protocol": protocol}


def merge(benchmark, kind, content, part=None, headline=None, protocol=None, produced_by=None,
          title=None, machine=None, gpu=None, commit=None, date=None):
    """Stores content as runs.kind (or runs.kind.parts.part) of benchmark; returns the run."""
    kind = kind_key(kind)
    data = load(benchmark)
    if produced_by:
        data["produced_by"] = produced_by
    if title:
        data["title"] = title
    data.setdefault("title", benchmark.replace("_", " "))
    if protocol and "protocol" not in data:
        data["protocol"] = protocol
    fields = run_fields(content, kind, protocol or data.get("protocol"), machine, gpu, commit, date)
    body = {k: v for k, v in (content.items() if isinstance(content, dict) else {"data": content}.items())
            if k not in ("benchmark",)}
    if isinstance(body.get("machine"), dict):
        body["machine_details"] = body.pop("machine")
    for k in REQUIRED:
        body.pop(k, None)
    runs = data.setdefault("runs", {})
    if part:
        # A run recorded in pieces: each part keeps its own fields; the run's commit and date are
        # its newest part's, its machine, GPU and protocol the options' or the run's so far.
        run = dict(runs.get(kind, {}))
        parts = run.setdefault("parts", {})
        parts[part] = dict(fields, **body)
        newest = max(parts.values(), key=lambda p: str(p.get("date", "")))
        run["machine"] = machine or run.get("machine") or fields["machine"]
        run["gpu"] = fields["gpu"] if gpu is not None or "gpu" not in run else run["gpu"]
        run["commit"], run["date"] = newest.get("commit"), newest.get("date")
        run["protocol"] = protocol or run.get("protocol") or data.get("protocol")
    else:
        run = dict(fields, **body)
    run.pop("headline", None)
    headline = headline or HEADLINES.get(benchmark, lambda r: None)(run)
    run = {k: run.get(k) for k in REQUIRED} | {k: v for k, v in run.items() if k not in REQUIRED}
    if headline:
        run = {k: run[k] for k in REQUIRED} | {"headline": headline} | \
              {k: v for k, v in run.items() if k not in REQUIRED}
    else:
        print(f"results_store: no headline for {benchmark} on {kind}: give --headline",
              file=sys.stderr)
    gaps = missing_fields(run)
    if gaps:
        raise ValueError(f"{benchmark} on {kind}: no {', '.join(gaps)} (give them as options)")
    runs[kind] = run
    save(data)
    return run


# Headlines of the benchmarks whose scripts merge their own runs.
def _quality(run):
    c = next((c for c in run.get("collections", []) if c.get("collection") == "scifact"), None)
    if not c:
        return None
    return (f"SciFact nDCG@10 {c['ndcg_cut_10']:.4f} (Anserini {c['published_bm25_ndcg_cut_10']}),"
            f" R@100 {c['recall_100']:.4f}")


def _index_size(run):
    parts = []
    for name, c in run.get("collections", {}).items():
        parts.append(f"{name} {c['tandem_postings_bits_per_posting']:.2f} vs "
                     f"{c['pisa_index_bits_per_posting']:.2f}")
    return "postings bits/posting, Tandem vs PISA: " + ", ".join(parts) if parts else None


def _scaling(run):
    best = [s for s in run.get("setups", []) if "qps_over_baseline" in s]
    if not best:
        return None
    s = max(best, key=lambda s: s["qps_over_baseline"])
    same = sum(a["identical"] for a in run.get("answers", []))
    total = sum(a["queries"] for a in run.get("answers", []))
    return (f"{s['setup']} {s['mode'].upper()} {s['qps_over_baseline']:.2f}x "
            f"{run.get('baseline', 'the baseline')}'s q/s; {same:,}/{total:,} answers identical")


def _deployment(run):
    row = next((r for r in run.get("rows", []) if r["peak_qps"] == 10000 and r["mode"] == "and"),
               None)
    if not row:
        return None
    return (f"10,000 q/s AND: {row['tandem']['nodes']} Tandem nodes vs {row['pisa']['nodes']} PISA")


def _figure7(run):
    out = []
    for mode, per_mode in run.get("modes", {}).items():
        best = per_mode.get("best_single", {}).get("sustained_qps") or max(
            (v["sustained_qps"] for v in per_mode.values() if isinstance(v, dict)
             and "sustained_qps" in v and "label" in v), default=0)
        out.append(f"{mode.upper()} {best:,.0f} q/s")
    return "sustained: " + ", ".join(out) if out else None


def _fuzz(run):
    totals = run.get("totals", [])
    if not totals:
        return None
    low = min(t["executions"] for t in totals)
    last = run.get("campaigns", [{}])[-1].get("targets", [])
    found = sum(t["findings"] for t in last)  # earlier campaigns' findings are fixed since
    return (f"{len(totals)} targets, each ≥ {low / 1e6:.1f}M executions"
            + (" with no finding" if found == 0 else f"; {found} findings in the last campaign"))


def _cpu_vs_pisa(run):
    t = None
    for part in (run.get("parts") or {"": run}).values():
        tp = part.get("throughput") or {}
        t = tp.get("tandem_processes_over_pisa_every_process_at_work") or \
            tp.get("tandem_over_pisa") or t
    return f"all cores: {t:.2f}x PISA's q/s" if t else None


HEADLINES = {"quality": _quality, "index_size": _index_size, "broker_scaling": _scaling,
             "multi_gpu_scaling": _scaling, "deployment_model": _deployment,
             "figure7": _figure7, "fuzz_executions": _fuzz, "cpu_vs_pisa": _cpu_vs_pisa}


def regenerate_readme():
    sys.path.insert(0, HERE)
    import results_readme
    results_readme.write()


def record(benchmark, kind, content, **fields):
    """merge() for a script that records its own run, then the README, and a line saying where."""
    merge(benchmark, kind, content, **fields)
    regenerate_readme()
    print(f"recorded in bench/results/{benchmark}.json as runs.{kind_key(kind)}")


def write_summary(result, lines, out):
    """Prints a summary's table, `lines`; with `out`, writes `result` there as JSON and the table
    beside it (.txt)."""
    print("\n".join(lines))
    if out:
        json.dump(result, open(out, "w"), indent=1)
        open(os.path.splitext(out)[0] + ".txt", "w").write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="store FILE as runs.KIND of bench/results/NAME.json")
    m.add_argument("file")
    m.add_argument("--benchmark", required=True)
    m.add_argument("--machine", required=True, help="machine kind: dev, h100, h200, h100x2, ...")
    m.add_argument("--part", help="store FILE as one part of the run")
    m.add_argument("--headline")
    m.add_argument("--protocol")
    m.add_argument("--produced-by")
    m.add_argument("--title")
    m.add_argument("--machine-desc", help="the machine in words (default: from FILE)")
    m.add_argument("--gpu", help="the GPU, or 'none' for a CPU-only benchmark")
    m.add_argument("--commit")
    m.add_argument("--date", help="default: from FILE, else now")
    m.add_argument("--no-readme", action="store_true", help="leave bench/results/README.md")
    args = ap.parse_args()
    with open(args.file) as f:
        content = json.load(f)
    try:
        merge(args.benchmark, args.machine, content, part=args.part, headline=args.headline,
              protocol=args.protocol, produced_by=args.produced_by, title=args.title,
              machine=args.machine_desc, gpu=args.gpu, commit=args.commit,
              date=args.date or (None if run_fields(content, "")["date"] else
                                 datetime.datetime.now(datetime.timezone.utc)
                                 .strftime("%Y-%m-%dT%H:%M:%SZ")))
    except ValueError as e:
        print(f"results_store: {e}", file=sys.stderr)
        return 1
    print(f"results_store: {args.benchmark} runs.{kind_key(args.machine)}"
          f"{'.parts.' + args.part if args.part else ''} <- {args.file}")
    if not args.no_readme:
        try:
            regenerate_readme()
        except ValueError as e:
            print(f"results_store: stored, but the README was not regenerated: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
