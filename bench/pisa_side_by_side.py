#!/usr/bin/python3
"""Summarizes one workload of bench/pisa_side_by_side.sh: Tandem's and PISA's latency per algorithm
and k on the same queries and postings, their ratio, MaxScore throughput on all cores, the speed at
which each engine's cursor reads whole lists, and the two index sizes. Prints a table and writes
JSON with the date, Tandem's commit, PISA's commit and the machine; --record KIND also stores it
in bench/results/cpu_vs_pisa.json as runs.KIND.parts.WORKLOAD (bench/results_store.py).

  python3 bench/pisa_side_by_side.py --work /tmp/pisa-side/synth --workload synth \
      --pisa-commit 69f2a83... --out /tmp/side_by_side_synth.json --record h100
"""
import argparse
import collections
import datetime
import glob
import json
import math
import os
import re
import subprocess
import sys

# PISA's algorithm -> Tandem's (mode, algorithm as tandem-bench-query names it).
PAIRS = [
    ("ranked_and", ("and", "plain")),
    ("block_max_ranked_and", ("and", "block-max")),
    ("maxscore", ("or", "maxscore")),
    ("block_max_maxscore", ("or", "block-max-maxscore")),
    ("wand", ("or", "wand")),
    ("block_max_wand", ("or", "block-max-wand")),
]


def percentile(sorted_values, p):
    """The nearest-rank percentile, as tandem-bench-query computes it."""
    if not sorted_values:
        return None
    i = math.ceil(p * len(sorted_values)) - 1
    return sorted_values[max(0, min(len(sorted_values) - 1, i))]


def pisa_latency(path):
    """{algorithm: {mean, p50, p99 in ms, queries}} from a `queries -o` TSV (usec per run)."""
    times = collections.defaultdict(list)
    queries = collections.defaultdict(set)
    with open(path) as f:
        next(f)
        for line in f:
            algorithm, qid, _, usec = line.rstrip("\n").split("\t")
            times[algorithm].append(float(usec) / 1000.0)
            queries[algorithm].add(qid)
    out = {}
    for algorithm, values in times.items():
        values.sort()
        out[algorithm] = {"mean": sum(values) / len(values), "p50": percentile(values, 0.5),
                          "p99": percentile(values, 0.99), "queries": len(queries[algorithm]),
                          "timed_runs": len(values) // max(1, len(queries[algorithm]))}
    return out


def tandem_latency(path):
    """{(mode, k, algorithm): {mean, p50, p99 in ms, ...}} from tandem-bench-query's JSON."""
    data = json.load(open(path))
    out = {}
    for r in data["results"]:
        lat = r.get("latency_seconds")
        if not lat:
            continue
        out[(r["mode"], r["k"], r["or_algorithm"] or ("block-max" if r["and_block_max"] else "plain"))] = {
            "mean": lat["mean"] * 1e3, "p50": lat["p50"] * 1e3, "p99": lat["p99"] * 1e3,
            "postings_decoded_per_query": r["postings_decoded_per_query"],
            "documents_scored_per_query": r["documents_scored_per_query"],
            "verified_against_reference": r["verified_against_reference"]}
    return data, out


def per_query_times(path, column, name):
    """{query id: mean ms over the timed passes} of one algorithm in a per-query TSV: PISA's
    `queries -o` output or tandem-bench-query's --per-query one (both with qid and usec columns)."""
    times = collections.defaultdict(list)
    with open(path) as f:
        header = next(f).rstrip("\n").split("\t")
        at = {c: i for i, c in enumerate(header)}
        for line in f:
            cells = line.rstrip("\n").split("\t")
            if all(cells[at[c]] == v for c, v in column.items()) and cells[at["algorithm"]] == name:
                times[cells[at["qid"]]].append(float(cells[at["usec"]]) / 1000.0)
    return {q: sum(v) / len(v) for q, v in times.items()}


def by_query_weight(pisa, tandem):
    """Where one row's time goes, query by query: the share of queries Tandem answers faster, and
    Tandem / PISA over the tenth of the queries PISA takes longest on and over the rest."""
    both = sorted((q for q in pisa if q in tandem), key=lambda q: pisa[q], reverse=True)
    if len(both) < 10:
        return None
    heavy, rest = both[: len(both) // 10], both[len(both) // 10:]
    ratio = lambda qs: sum(tandem[q] for q in qs) / max(1e-12, sum(pisa[q] for q in qs))
    return {"queries": len(both),
            "tandem_faster_share": sum(tandem[q] < pisa[q] for q in both) / len(both),
            "heaviest_tenth_tandem_over_pisa": ratio(heavy),
            "heaviest_tenth_share_of_pisa_time": sum(pisa[q] for q in heavy) / max(
                1e-12, sum(pisa[q] for q in both)),
            "rest_tandem_over_pisa": ratio(rest)}


def interleaved_rounds(w, k, pisa_name, mode, name):
    """[(round, tandem, pisa)] of one row's interleaved rounds (LAT_ROUNDS > 1), sorted by
    Tandem / PISA; [] when the row has none."""
    out = []
    for path in glob.glob(f"{w}/pisa-lat-k{k}-r*-{pisa_name}.tsv"):
        m = re.fullmatch(rf"pisa-lat-k{k}-r([0-9]+)-{pisa_name}\.tsv", os.path.basename(path))
        if m is None:
            continue
        r = int(m.group(1))
        tandem_path = f"{w}/tandem-lat-k{k}-r{r}-{pisa_name}.json"
        if not os.path.exists(tandem_path):
            continue
        p = pisa_latency(path).get(pisa_name)
        t = tandem_latency(tandem_path)[1].get((mode, k, name))
        if t and p and p["mean"] > 0:
            out.append((r, t, p))
    return sorted(out, key=lambda x: x[1]["mean"] / x[2]["mean"])


def decode_rates(w):
    """The decode phase: {"tandem": {walk: docIDs/s}, "pisa": {algorithm: docIDs/s}, ...}, or None.

    Tandem's rate is the median over codec_bench's repetitions of CursorWalk; PISA's is every
    posting of every timed run over the summed query times of its `queries -o` TSV."""
    terms_path, pisa_path, tandem_path = (f"{w}/decode-terms.txt", f"{w}/pisa-decode.tsv",
                                          f"{w}/tandem-decode.json")
    if not all(os.path.exists(p) for p in (terms_path, pisa_path, tandem_path)):
        return None
    df = [int(line.rstrip("\n").split("\t")[1]) for line in open(terms_path) if line.strip()]
    postings, usec = collections.Counter(), collections.Counter()
    with open(pisa_path) as f:
        next(f)
        for line in f:
            algorithm, qid, _, time = line.rstrip("\n").split("\t")
            postings[algorithm] += df[int(qid) - 1]
            usec[algorithm] += float(time)
    pisa = {a: postings[a] / (usec[a] / 1e6) for a in postings if usec[a] > 0}
    tandem = {}
    bench = json.load(open(tandem_path))
    # The median over the repetitions; with RUNS=1 Google Benchmark writes no aggregates, and the
    # one run is the figure.
    for b in bench["benchmarks"]:
        walk = b["run_name"].split("/")[1] if b["run_name"].startswith("CursorWalk/") else None
        if walk and (b.get("aggregate_name") == "median" or
                     (b.get("run_type") == "iteration" and walk not in tandem)):
            tandem[walk] = b["items_per_second"]
    # Google Benchmark's context: the machine (CPUs, caches, clock) and the binaries' commit.
    context = bench.get("context", {})
    out = {"lists": len(df), "postings": sum(df), "tandem_docids_per_second": tandem,
           "pisa_docids_per_second": pisa,
           "machine": {key: context.get(key) for key in ("host_name", "num_cpus", "mhz_per_cpu",
                                                          "caches", "commit", "date")}}
    for walk, algorithm in (("docids", "or"), ("docids+freqs", "or_freq")):
        if walk in tandem and algorithm in pisa:
            out[f"tandem_over_pisa_{walk}"] = tandem[walk] / pisa[algorithm]
    return out


def pisa_rate(path):
    """Queries per second of one run of PISA's queries tool: its queries over their summed times
    (microseconds, the output's fourth column)."""
    n, usec = 0, 0.0
    with open(path) as f:
        next(f)
        for line in f:
            n += 1
            usec += float(line.rstrip("\n").split("\t")[3])
    return n / (usec / 1e6) if usec > 0 else 0.0


def distinct_queries(path):
    """How many queries one run of PISA's queries tool timed (each once a pass)."""
    with open(path) as f:
        next(f)
        return len({line.split("\t")[1] for line in f})


def or_result(data):
    """The OR row of a throughput run's tandem-bench-query JSON (--modes or, one k, one algorithm)."""
    return next(x for x in data["results"] if x["mode"] == "or")


def process_set(w, engine, tag=""):
    """One throughput run of single-threaded processes (pisa_side_by_side.sh's `processes`): each
    process's q/s in share order, their sum, the queries and the run's wall clock; None if absent."""
    if engine == "pisa":
        pattern, suffix = f"pisa-tput{tag}", "tsv"
    else:
        pattern, suffix = f"tandem-tput-proc{tag}", "json"
    parts = sorted(glob.glob(f"{w}/{pattern}-[0-9]*.{suffix}"),
                   key=lambda part: int(re.search(r"-([0-9]+)\.[a-z]+$", part).group(1)))
    if not parts:
        return None
    rates, queries, verified = [], 0, 0
    for part in parts:
        if engine == "pisa":
            rates.append(pisa_rate(part))
            queries += distinct_queries(part)
        else:
            pj = json.load(open(part))
            r = or_result(pj)
            rates.append(r["qps_summed_over_threads"])
            queries += pj["queries"]["count"]
            verified += r.get("verified_against_reference", 0)
    out = {"qps_sum_of_processes": sum(rates), "processes": len(rates), "qps_per_process": rates,
           "queries": queries}
    if engine != "pisa":
        out["verified_against_reference"] = verified
    if os.path.exists(f"{w}/{pattern}.json"):
        meta = json.load(open(f"{w}/{pattern}.json"))
        out["passes"] = meta["passes"]
        out["wall_seconds"] = meta["wall_seconds"]
        out["qps_wall_clock"] = queries * meta["passes"] / meta["wall_seconds"]
    return out


def every_process_at_work(short, long):
    """The rate of the passes a longer run adds, over the wall time it adds: the process starts,
    index loads and checks cancel, and so do uneven starts, which give some processes a quieter
    host for a while and so a higher rate of their own."""
    if not (short and long and "passes" in short and "passes" in long):
        return None
    extra_seconds = long["wall_seconds"] - short["wall_seconds"]
    extra_passes = long["passes"] - short["passes"]
    if extra_seconds <= 0 or extra_passes <= 0 or long["queries"] != short["queries"]:
        return None
    rate = short["queries"] * extra_passes / extra_seconds
    # Above what the processes' own query times allow (their summed rate, every one at work all
    # along), the two runs' starts differed by more than the extra passes took: no figure.
    if rate > 1.1 * long["qps_sum_of_processes"]:
        return None
    return rate


def directory_bytes(paths):
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, help="the workload's work directory")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--pisa-commit", default="unknown")
    ap.add_argument("--wand-block", type=int, default=64)
    ap.add_argument("--out", help="the summary's JSON")
    ap.add_argument("--record", metavar="KIND",
                    help="store the summary in bench/results/cpu_vs_pisa.json as runs.KIND.parts."
                    "WORKLOAD (a machine kind: dev, h100, h200, ...)")
    ap.add_argument("--part", help="the part's name under runs.KIND.parts (default: the workload)")
    args = ap.parse_args()
    if not args.out and not args.record:
        ap.error("give --out FILE, --record KIND, or both")
    w = args.work
    here = os.path.dirname(os.path.abspath(__file__))
    # TANDEM_COMMIT, else the commit tandem-bench-query records (below), else this tree's.
    commit = os.environ.get("TANDEM_COMMIT") or subprocess.run(
        ["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
        text=True).stdout.strip() or "unknown"

    result = {"benchmark": "cpu_vs_pisa", "workload": args.workload,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "tandem_commit": commit, "pisa_commit": args.pisa_commit,
              "pisa": {"encoding": "block_simdbp", "scorer": "bm25 k1 0.9 b 0.4",
                       "wand_block_postings": args.wand_block},
              "latency_ms": [], "throughput": {}}
    tandem_json = None
    tandem = {}
    # One file for each k (tandem-lat-kK.json), or one for both (tandem-lat.json, earlier runs).
    single = [p for p in glob.glob(f"{w}/tandem-lat-k*.json")
              if re.fullmatch(r"tandem-lat-k[0-9]+\.json", os.path.basename(p))]
    rounds = sorted(glob.glob(f"{w}/tandem-lat-k*-r*-*.json"))
    for path in sorted(single) or glob.glob(f"{w}/tandem-lat.json") or rounds[:1]:
        data, part = tandem_latency(path)
        tandem_json = tandem_json or data
        tandem.update(part)
    if tandem_json:
        result["machine"] = tandem_json.get("machine")
        # The commit of the binaries measured, which tandem-bench-query records, over the tree's.
        if not os.environ.get("TANDEM_COMMIT") and (result["machine"] or {}).get("commit"):
            result["tandem_commit"] = result["machine"]["commit"]
        result["index"] = tandem_json.get("index")
        result["queries"] = tandem_json.get("queries")
    resolution = ((result.get("queries") or {}).get("query_time_resolution") or "exact")
    print(f"{args.workload}: one thread, ms per query (mean / p50 / p99), Tandem / PISA = ratio of "
          f"means; Tandem's query times {resolution}, PISA's whole microseconds, truncated")
    print(f"{'algorithm':22} {'k':>5} | {'Tandem':>24} | {'PISA':>24} | {'ratio':>6}")
    for k in (10, 1000):
        path = f"{w}/pisa-lat-k{k}.tsv"
        pisa = pisa_latency(path) if os.path.exists(path) else {}
        for pisa_name, (mode, name) in PAIRS:
            t = tandem.get((mode, k, name))
            p = pisa.get(pisa_name)
            row_rounds = interleaved_rounds(w, k, pisa_name, mode, name)
            if row_rounds:
                # The median round: its figures, and its ratio for the row's.
                t, p = row_rounds[(len(row_rounds) - 1) // 2][1:]
            if t is None and p is None:
                continue
            ratio = t["mean"] / p["mean"] if t and p and p["mean"] > 0 else None
            row = {"k": k, "pisa_algorithm": pisa_name, "tandem_algorithm": f"{mode}/{name}",
                   "tandem": t, "pisa": p, "tandem_over_pisa_mean": ratio}
            if row_rounds:
                row["rounds"] = [{"round": r, "tandem_mean": rt["mean"], "pisa_mean": rp["mean"],
                                  "tandem_over_pisa_mean": rt["mean"] / rp["mean"]}
                                 for r, rt, rp in sorted(row_rounds)]
                row["interleaved_rounds_note"] = (
                    "each round PISA's then Tandem's passes of this row alone; the figures are the "
                    "median round's, by ratio")
            # Query by query, where each engine wrote its own times (tandem-bench-query --per-query).
            tandem_tsv = f"{w}/tandem-lat-k{k}.tsv"
            if p and t and os.path.exists(path) and os.path.exists(tandem_tsv):
                split = by_query_weight(
                    per_query_times(path, {}, pisa_name),
                    per_query_times(tandem_tsv, {"mode": mode, "k": str(k)}, name))
                if split:
                    row["by_query"] = split
            result["latency_ms"].append(row)
            fmt = lambda x: "-" if x is None else f"{x['mean']:7.3f} {x['p50']:7.3f} {x['p99']:8.3f}"
            spread = ""
            if row_rounds:
                lo = min(rt["mean"] / rp["mean"] for _, rt, rp in row_rounds)
                hi = max(rt["mean"] / rp["mean"] for _, rt, rp in row_rounds)
                spread = (f"  ({len(row_rounds)} rounds: {lo:.2f}x-{hi:.2f}x)" if len(row_rounds) > 1
                          else "  (interleaved)")
            print(f"{pisa_name:22} {k:5} | {fmt(t):>24} | {fmt(p):>24} | "
                  f"{'-' if ratio is None else f'{ratio:5.2f}x':>6}{spread}")

    split_rows = [r for r in result["latency_ms"] if "by_query" in r]
    if split_rows:
        print("query by query (mean of each query's timed passes): queries Tandem answers faster, "
              "and Tandem / PISA over the tenth of the queries PISA takes longest on (their share "
              "of PISA's time) and over the other nine tenths")
        for r in split_rows:
            b = r["by_query"]
            print(f"{r['pisa_algorithm']:22} {r['k']:5} | {b['tandem_faster_share']:5.0%} faster | "
                  f"heaviest tenth {b['heaviest_tenth_tandem_over_pisa']:5.2f}x "
                  f"({b['heaviest_tenth_share_of_pisa_time']:.0%} of PISA's time) | "
                  f"the rest {b['rest_tandem_over_pisa']:5.2f}x")

    if os.path.exists(f"{w}/tandem-tput.json"):
        tj = json.load(open(f"{w}/tandem-tput.json"))
        r = or_result(tj)
        # Summed over the threads' own query times, as PISA's rate is over its processes'.
        result["throughput"]["tandem"] = {"qps": r.get("qps_summed_over_threads") or r["qps_all_threads"],
                                          "qps_wall_clock": r["qps_all_threads"],
                                          "threads": r["threads"],
                                          "queries": tj["queries"]["count"],
                                          "commit": (tj.get("machine") or {}).get("commit")}
        if r.get("qps_per_thread"):
            result["throughput"]["tandem"]["qps_per_thread"] = r["qps_per_thread"]
        # Without latency runs, the throughput run's binaries give the machine and the commit.
        if not tandem_json and tj.get("machine"):
            result.setdefault("machine", tj["machine"])
            if not os.environ.get("TANDEM_COMMIT") and tj["machine"].get("commit"):
                result["tandem_commit"] = tj["machine"]["commit"]
        if "verified_against_reference" in r:
            verified = r["verified_against_reference"]
            result["throughput"]["tandem"]["verified_against_reference"] = verified
        # How the postings were held (mapped, or copied into huge pages) and what the kernel granted.
        for key in ("postings_memory", "postings_huge_page_bytes"):
            if key in (tj.get("index") or {}):
                result["throughput"]["tandem"][key] = tj["index"][key]
    # Single-threaded processes, PISA's and Tandem's (tandem-bench-query --share), each run twice.
    for key, engine in (("pisa", "pisa"), ("tandem_processes", "tandem")):
        short = process_set(w, engine)
        if not short:
            continue
        long = process_set(w, engine, "-long")
        rate = every_process_at_work(short, long)
        entry = {k: v for k, v in short.items() if k not in ("passes", "wall_seconds")}
        if long:
            entry["longer_run"] = {"passes": long.get("passes"),
                                   "qps_sum_of_processes": long["qps_sum_of_processes"],
                                   "qps_per_process": long["qps_per_process"]}
        if rate:
            entry["qps_every_process_at_work"] = rate
        result["throughput"][key] = entry
    # Share by share: Tandem's thread or process t and PISA's process t ran the same queries on the
    # same core.
    per_process = result["throughput"].get("pisa", {}).get("qps_per_process")
    for key, what, unit in (("tandem", "", "a thread"),
                            ("tandem_processes", " as processes", "a process")):
        mine = result["throughput"].get(key, {}).get("qps_per_thread" if key == "tandem"
                                                     else "qps_per_process")
        if not (mine and per_process and len(mine) == len(per_process)):
            continue
        ratios = sorted(t / p for t, p in zip(mine, per_process) if t and p)
        if ratios:
            result["throughput"][f"{key}_over_pisa_per_share"] = ratios
            print(f"share by share (the same queries on the same core), Tandem{what} / PISA: "
                  f"{ratios[0]:.2f}x-{ratios[-1]:.2f}x, median {ratios[len(ratios) // 2]:.2f}x; "
                  f"Tandem {min(mine):,.0f}-{max(mine):,.0f} q/s {unit}, PISA "
                  f"{min(per_process):,.0f}-{max(per_process):,.0f} a process")
    # Each engine alone on one core, on the same queries: what its threads or processes would sum
    # to if every one kept that speed with all cores busy.
    alone = {}  # engine: (q/s, queries)
    if os.path.exists(f"{w}/tandem-tput-alone.json"):
        aj = json.load(open(f"{w}/tandem-tput-alone.json"))
        r = or_result(aj)
        alone["tandem"] = (r["qps_summed_over_threads"], aj["queries"]["count"])
    if os.path.exists(f"{w}/pisa-tput-alone.tsv"):
        alone["pisa"] = (pisa_rate(f"{w}/pisa-tput-alone.tsv"),
                         distinct_queries(f"{w}/pisa-tput-alone.tsv"))
    for key, engine in (("tandem", "tandem"), ("tandem_processes", "tandem"), ("pisa", "pisa")):
        entry = result["throughput"].get(key)
        qps, queries = alone.get(engine, (None, 0))
        if not entry or not qps:
            continue
        workers = entry.get("threads") or entry.get("processes")
        entry["qps_alone_one_core"] = qps
        entry["queries_alone"] = queries
        entry["kept_speed_under_load"] = entry.get("qps", entry.get("qps_sum_of_processes")) / (qps * workers)
    if result["throughput"]:
        t = result["throughput"].get("tandem", {}).get("qps")
        p = result["throughput"].get("pisa", {}).get("qps_sum_of_processes")
        if t and p:
            result["throughput"]["tandem_over_pisa"] = t / p
        wall = result["throughput"].get("pisa", {}).get("qps_wall_clock")
        t_wall = result["throughput"].get("tandem", {}).get("qps_wall_clock")
        print(f"MaxScore top-10 throughput, summed over each thread's or process's own query times: "
              f"Tandem {t or 0:,.0f} q/s, PISA {p or 0:,.0f}"
              + (f" (Tandem / PISA {t / p:.2f}x)" if t and p else "")
              + f"; by the wall clock: Tandem {t_wall or 0:,.0f} (each pass waits for its slowest "
              f"thread), PISA {wall or 0:,.0f} (process starts and index loads included)")
        tp = result["throughput"].get("tandem_processes", {}).get("qps_sum_of_processes")
        if tp and p:
            result["throughput"]["tandem_processes_over_pisa"] = tp / p
            print(f"Tandem as a single-threaded process per core, as PISA runs: {tp:,.0f} q/s summed "
                  f"(Tandem / PISA {tp / p:.2f}x" + (f"; Tandem's threads in one process / its "
                  f"processes {t / tp:.2f}x)" if t else ")"))
        pw = result["throughput"].get("pisa", {}).get("qps_every_process_at_work")
        tw = result["throughput"].get("tandem_processes", {}).get("qps_every_process_at_work")
        if pw:
            line = (f"with every process at work (the longer runs' extra passes over their extra "
                    f"wall time): PISA {pw:,.0f} q/s")
            if tw:
                result["throughput"]["tandem_processes_over_pisa_every_process_at_work"] = tw / pw
                line += f", Tandem's processes {tw:,.0f} ({tw / pw:.2f}x)"
            if t_wall:
                result["throughput"]["tandem_wall_clock_over_pisa_every_process_at_work"] = t_wall / pw
                line += f"; Tandem's threads by the wall clock {t_wall:,.0f} ({t_wall / pw:.2f}x)"
            print(line)
        ta = result["throughput"].get("tandem", {}).get("qps_alone_one_core")
        pa = result["throughput"].get("pisa", {}).get("qps_alone_one_core")
        if ta and pa:
            tk = result["throughput"]["tandem"]["kept_speed_under_load"]
            pk = result["throughput"]["pisa"]["kept_speed_under_load"]
            tpk = result["throughput"].get("tandem_processes", {}).get("kept_speed_under_load")
            print(f"alone on one core, the first {result['throughput']['tandem']['queries_alone']} "
                  f"of those queries: Tandem {ta:,.0f} q/s, PISA {pa:,.0f} (Tandem / PISA "
                  f"{ta / pa:.2f}x); with every core busy each thread keeps {tk:.0%} of that "
                  f"speed" + (f", each Tandem process {tpk:.0%}" if tpk else "")
                  + f", each PISA process {pk:.0%}")

    decode = decode_rates(w)
    if decode:
        result["decode"] = decode
        result.setdefault("machine", decode["machine"])
        # Alone, the decode phase's binaries give the commit, as tandem-bench-query's do above.
        if not tandem_json and not os.environ.get("TANDEM_COMMIT") and decode["machine"].get("commit"):
            result["tandem_commit"] = decode["machine"]["commit"]
        t, p = decode["tandem_docids_per_second"], decode["pisa_docids_per_second"]
        print(f"decode, one thread, {decode['lists']} lists of {decode['postings']:,} postings read "
              f"whole by each engine's cursor, docIDs/s (Tandem / PISA):")
        for walk, algorithm in (("docids", "or"), ("docids+freqs", "or_freq")):
            if walk in t and algorithm in p:
                print(f"  {walk:13} Tandem {t[walk] / 1e6:8.1f} M, PISA {algorithm:8} "
                      f"{p[algorithm] / 1e6:8.1f} M ({t[walk] / p[algorithm]:.2f}x)")

    postings = (result.get("index") or {}).get("postings")
    tandem_bytes = directory_bytes(glob.glob(f"{w}/idx/*.bin"))
    if tandem_bytes == 0:  # summarized away from the indexes: no size to report
        postings = None
    pisa_bytes = directory_bytes([f"{w}/c.block_simdbp"])
    postings_bytes = directory_bytes([f"{w}/idx/postings.bin"])
    if postings:
        result["size"] = {"tandem_index_bytes": tandem_bytes,
                          "tandem_postings_bytes": postings_bytes, "pisa_index_bytes": pisa_bytes,
                          "pisa_wand_bytes": directory_bytes([f"{w}/c.wand"])}
        result["size"]["tandem_bits_per_posting"] = 8.0 * tandem_bytes / postings
        result["size"]["tandem_postings_bits_per_posting"] = 8.0 * postings_bytes / postings
        result["size"]["pisa_bits_per_posting"] = 8.0 * pisa_bytes / postings
        print(f"index: Tandem {8.0 * tandem_bytes / postings:.2f} bits/posting with every file "
              f"({8.0 * postings_bytes / postings:.2f} for postings.bin), PISA "
              f"{8.0 * pisa_bytes / postings:.2f} (block_simdbp, without its WAND data)")
    if os.path.exists(f"{w}/prepare.json"):
        result["prepare_seconds"] = json.load(open(f"{w}/prepare.json"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if args.record:
        sys.path.insert(0, here)
        import results_store
        machine = result.get("machine") or {}
        queries = result.get("queries") or {}
        results_store.merge(
            "cpu_vs_pisa", args.record, result, part=args.part or args.workload, gpu="none",
            machine=(f"{machine.get('cpu', 'unknown CPU')}, {machine.get('cores', '?')} cores"
                     if isinstance(machine, dict) else None),
            produced_by="`bench/pisa_side_by_side.sh`", title="CPU engine beside PISA",
            protocol=f"workload {args.workload}, PISA {args.pisa_commit[:7]} block_simdbp with "
                     f"WAND data in blocks of {args.wand_block}; Tandem timed from "
                     f"{queries.get('timed_from') or 'the query text'}, query times "
                     f"{queries.get('query_time_resolution') or 'exact'}")
        results_store.regenerate_readme()
        print(f"recorded in bench/results/cpu_vs_pisa.json as runs."
              f"{results_store.kind_key(args.record)}.parts.{args.part or args.workload}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
