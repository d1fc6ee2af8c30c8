#!/usr/bin/python3
"""Summarizes a scaling run (bench/broker_scaling.sh, bench/multi_gpu_scaling.sh): per setup and
query mode, the latency one query at a time and the throughput at saturation, each against the
baseline setup; and whether every answer of every other setup equals the baseline's (same documents
in the same order, equal scores). Prints a table and writes JSON (--out, and the table beside it)
with the date, commit, machine and GPU; --record stores it in bench/results/BENCHMARK.json under
runs.KIND, KIND the --machine's short name (bench/results_store.py).

  python3 bench/scaling_summary.py --work /tmp/broker-scaling --benchmark broker_scaling \
      --machine nvidia-h200 --record
"""
import argparse
import datetime
import glob
import json
import os
import re
import subprocess

import results_store


def rows(path):
    data = json.load(open(path))
    (row,) = data["rows"]
    return data, row


def answers(path):
    out = {}
    with open(path) as f:
        for line in f:
            a = json.loads(line)
            hits = a.get("response", {}).get("hits", [])
            out[a.get("id")] = ([(h["docid"], h["score"]) for h in hits],
                                a.get("response", {}).get("degraded", False), a.get("status"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--machine", required=True, help="the machine kind, e.g. nvidia-h200")
    ap.add_argument("--benchmark", required=True, help="broker_scaling, multi_gpu_scaling")
    ap.add_argument("--baseline", default="direct", help="the setup the others are compared with")
    ap.add_argument("--note", default="", help="what the setups are, stored and printed")
    ap.add_argument("--cores", type=int, default=os.cpu_count(),
                    help="the measured machine's cores (when summarized elsewhere)")
    ap.add_argument("--gpu", default="", help="the measured machine's GPU (when summarized elsewhere)")
    ap.add_argument("--commit", default=os.environ.get("TANDEM_COMMIT", ""))
    ap.add_argument("--out", help="the summary's JSON (the table is written beside it, .txt)")
    ap.add_argument("--record", action="store_true",
                    help="store the summary in bench/results/BENCHMARK.json under runs.KIND")
    ap.add_argument("--gpu-engine", action="store_true",
                    help="the setups ran their queries on the GPU (else the GPU is recorded as "
                    "unused)")
    args = ap.parse_args()
    if not args.out and not args.record:
        ap.error("give --out FILE, --record, or both")
    w = args.work
    commit = args.commit or subprocess.run(
        ["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short=12",
         "HEAD"], capture_output=True, text=True).stdout.strip()
    gpu = [args.gpu] if args.gpu else subprocess.run(
        ["sh", "-c", "nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null"],
        capture_output=True, text=True).stdout.strip().splitlines()
    result = {"benchmark": args.benchmark, "note": args.note, "baseline": args.baseline,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "commit": commit, "machine": {"kind": args.machine, "cores": args.cores,
                                            "gpu": gpu[0] if gpu else None},
              "setups": [], "answers": []}
    table = {}
    for path in sorted(glob.glob(f"{w}/load_*_c*.json")):
        m = re.match(r"load_(\w+?)_(or|and|and_or)_c(\d+)\.json", os.path.basename(path))
        if not m:
            continue
        setup, mode, c = m.group(1), m.group(2), int(m.group(3))
        data, row = rows(path)
        entry = {"setup": setup, "mode": mode, "concurrency": c, "qps": row["achieved_qps"],
                 "p50_ms": row["latency_ms"]["p50"], "p99_ms": row["latency_ms"]["p99"],
                 "errors": sum(v for k, v in row["status_counts"].items() if k != "OK"),
                 "index": data.get("server_index")}
        result["setups"].append(entry)
        # The run's date: its last measurement's, wherever it is summarized.
        if data.get("timestamp") and data["timestamp"] > result.get("measured", ""):
            result["measured"] = data["timestamp"]
        table[(setup, mode, c)] = entry
    for path in sorted(glob.glob(f"{w}/answers_*_*.jsonl")):
        m = re.match(r"answers_(\w+?)_(or|and|and_or)\.jsonl", os.path.basename(path))
        if not m or m.group(1) == args.baseline:
            continue
        setup, mode = m.group(1), m.group(2)
        base = answers(f"{w}/answers_{args.baseline}_{mode}.jsonl")
        other = answers(path)
        same = sum(1 for q, a in base.items() if q in other and other[q][0] == a[0]
                   and not other[q][1] and other[q][2] is None)
        result["answers"].append({"setup": setup, "mode": mode, "queries": len(base),
                                  "identical": same})
    result["date"] = result.pop("measured", result["date"])
    modes = sorted({e["mode"] for e in result["setups"]}, reverse=True)
    concurrencies = sorted({e["concurrency"] for e in result["setups"]})
    setups = sorted({e["setup"] for e in result["setups"]},
                    key=lambda s: (s != args.baseline, s))
    lines = [f"{args.benchmark} on {args.machine} ({args.cores} cores"
             f"{', ' + result['machine']['gpu'] if result['machine']['gpu'] else ''}), commit {commit}, "
             f"{result['date']}; top-10, TREC 2005 efficiency queries"]
    if args.note:
        lines.append(args.note)
    lines += [
             f"{'setup':10} {'mode':4} {'conc':>5} {'q/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
             f"{'errors':>6} {'vs ' + args.baseline:>13}"]
    for mode in modes:
        for c in concurrencies:
            base = table.get((args.baseline, mode, c))
            for s in setups:
                e = table.get((s, mode, c))
                if e is None:
                    continue
                if c == 1:
                    ratio = f"p50 {e['p50_ms'] / base['p50_ms']:.2f}x" if base else "-"
                    if base and s != args.baseline:
                        e["p50_overhead_ms"] = e["p50_ms"] - base["p50_ms"]
                        e["p99_overhead_ms"] = e["p99_ms"] - base["p99_ms"]
                else:
                    ratio = f"q/s {e['qps'] / base['qps']:.2f}x" if base else "-"
                    if base:
                        e["qps_over_baseline"] = e["qps"] / base["qps"]
                lines.append(f"{s:10} {mode:4} {c:5} {e['qps']:10.0f} {e['p50_ms']:8.3f} "
                             f"{e['p99_ms']:8.3f} {e['errors']:6} {ratio:>13}")
    for a in result["answers"]:
        lines.append(f"answers {a['setup']} {a['mode']}: {a['identical']} of {a['queries']} "
                     f"identical to {args.baseline}'s")
    results_store.write_summary(result, lines, args.out)
    if args.record:
        results_store.record(
            args.benchmark, args.machine, result, protocol=args.note or None,
            produced_by=f"`bench/{args.benchmark}.sh`",
            machine=f"{args.cores} cores of a {args.machine} machine",
            gpu=result["machine"]["gpu"] if args.gpu_engine and result["machine"]["gpu"] else "none")

if __name__ == "__main__":
    main()
