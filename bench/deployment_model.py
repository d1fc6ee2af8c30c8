#!/usr/bin/python3
"""A model of Tandem at web scale: GOV2 x 100 (2.52 billion documents) cut into shards, every
query fanned out to one replica of each shard by tandem-broker, and how many nodes (shards x
replicas) and brokers a peak query rate needs at the per-node rates measured on the 25M-document
GOV2-like workload, beside PISA on machines of the same 16 cores.

The model (Ding et al. 2009, Figure 1; Dean and Barroso 2013 for the replica count):
  - a query costs each shard work in proportion to the shard's postings, so a node serving a shard
    of D documents answers rate_25M * 25.2M / D queries per second;
  - every query reaches every shard, so each shard sees the whole peak rate; it gets
    ceil(peak * headroom / node_rate) replicas, plus one spare for failures (at least two);
  - a shard's size is bounded by what one node holds: the whole-vocabulary index in memory (about
    10 GB per 25M documents; 10 GOV2s in 128 GB of RAM), and, for Tandem, the query lists in the
    GPU's device cache (2.4 to 4.8 GB per 25M documents: also 10 GOV2s or more in 80 GB); for each
    engine, mode and peak the model picks the shard size, 1 to 10 GOV2s, that needs fewest nodes;
  - brokers: ceil(peak * headroom / broker_rate) + 1, at the broker's measured rate.
Prints a table and writes JSON (--out): every input, where it was measured, and every output;
--record KIND stores it in bench/results/deployment_model.json under runs.KIND, KIND the machine
kind whose rates it models (bench/results_store.py).

  python3 bench/deployment_model.py --record h100
"""
import argparse
import datetime
import math
import os
import subprocess

import results_store

GOV2_DOCS = 25_205_179  # TREC GOV2 (Ding et al. 2009, section 6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=100, help="collection = GOV2 x scale")
    ap.add_argument("--peaks", default="1000,10000,50000", help="peak queries/s to plan for")
    ap.add_argument("--headroom", type=float, default=1.5,
                    help="capacity over the peak (load swings, a replica lost at peak)")
    # Measured rates, 25M-document GOV2-like index, top-10, TREC 2005 efficiency queries.
    ap.add_argument("--tandem-and", type=float, default=80000,
                    help="q/s of one node (1 H100, 16 cores), AND on the GPU over SearchStream "
                    "(bench/results/gpu_batch_server.json)")
    ap.add_argument("--tandem-or", type=float, default=21000,
                    help="q/s of one node, OR (bench/results/figure7.json)")
    ap.add_argument("--pisa-and", type=float, default=16 / 3.163e-3,
                    help="q/s of PISA on 16 cores, block-max ranked AND: 16 / its one-thread "
                    "mean of 3.163 ms (the side-by-side run of 2026-11-27 on an H200 machine's "
                    "host, in bench/results/'s history; the run of 2026-12-02 measured 2.818 ms)")
    ap.add_argument("--pisa-or", type=float, default=2678,
                    help="q/s of PISA on 16 cores, MaxScore, 16 processes "
                    "(the side-by-side run of 2026-11-27, as above; the run of 2026-12-02 "
                    "measured 1,805 and 2,396)")
    ap.add_argument("--broker-rate", type=float, default=0,
                    help="q/s of one broker; 0: the most one broker process answered in "
                    "bench/results/broker_scaling.json and multi_gpu_scaling.json")
    # What one node holds.
    ap.add_argument("--max-gov2s-per-node", type=int, default=10,
                    help="the largest shard one node holds, in GOV2s (memory bound)")
    ap.add_argument("--out", help="the model's JSON (the table is written beside it, .txt)")
    ap.add_argument("--record", metavar="KIND",
                    help="store the model in bench/results/deployment_model.json as runs.KIND")
    args = ap.parse_args()
    if not args.out and not args.record:
        ap.error("give --out FILE, --record KIND, or both")

    broker_rate, broker_source = args.broker_rate, "--broker-rate"
    if broker_rate == 0:
        for name in ("broker_scaling", "multi_gpu_scaling"):
            for kind, run in results_store.load(name).get("runs", {}).items():
                rates = [e["qps"] for e in run.get("setups", [])
                         if e["setup"].startswith(("broker", "shards")) and e["concurrency"] > 1]
                if rates and max(rates) > broker_rate:
                    broker_rate, broker_source = max(rates), f"bench/results/{name}.json, runs.{kind} " \
                        "(the most one broker process answered)"
    docs = GOV2_DOCS * args.scale
    measured = {"tandem": {"and": args.tandem_and, "or": args.tandem_or},
                "pisa": {"and": args.pisa_and, "or": args.pisa_or}}

    def plan(engine, mode, peak):
        """The shard size (in GOV2s) needing fewest nodes, and its layout."""
        best = None
        for m in range(1, args.max_gov2s_per_node + 1):
            shards = math.ceil(docs / (GOV2_DOCS * m))
            node_qps = measured[engine][mode] / m  # work per query grows with the shard
            replicas = max(2, math.ceil(peak * args.headroom / node_qps) + 1)
            p = {"gov2s_per_shard": m, "shards": shards, "node_qps": node_qps,
                 "replicas_per_shard": replicas, "nodes": shards * replicas}
            if best is None or p["nodes"] < best["nodes"]:
                best = p
        return best

    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                             "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"benchmark": "deployment_model", "model": __doc__.split("\n\n")[1],
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "commit": commit, "inputs": vars(args) | {"broker_rate": broker_rate,
                                                         "broker_rate_source": broker_source},
              "collection_documents": docs, "rows": []}
    lines = [f"GOV2 x {args.scale:g} = {docs / 1e9:.2f}B documents; shards of 1 to "
             f"{args.max_gov2s_per_node} GOV2s, whichever needs fewest nodes; headroom "
             f"{args.headroom}x and one spare replica per shard; 16-core nodes (Tandem: plus one "
             "H100)",
             f"{'peak q/s':>9} {'mode':4} | {'Tandem shards x replicas':>24} {'nodes':>6} | "
             f"{'PISA shards x replicas':>22} {'nodes':>6} | {'PISA/Tandem':>11} | {'brokers':>7}"]
    for peak in [float(p) for p in args.peaks.split(",")]:
        for mode in ("and", "or"):
            row = {"peak_qps": peak, "mode": mode}
            for engine in ("tandem", "pisa"):
                row[engine] = plan(engine, mode, peak)
            row["brokers"] = (math.ceil(peak * args.headroom / broker_rate) + 1
                              if broker_rate > 0 else None)
            row["pisa_nodes_over_tandem"] = row["pisa"]["nodes"] / row["tandem"]["nodes"]
            result["rows"].append(row)
            layout = lambda p: f"{p['shards']} x {p['replicas_per_shard']}"
            lines.append(f"{peak:9.0f} {mode:4} | {layout(row['tandem']):>24} "
                         f"{row['tandem']['nodes']:6} | {layout(row['pisa']):>22} "
                         f"{row['pisa']['nodes']:6} | {row['pisa_nodes_over_tandem']:10.1f}x | "
                         f"{row['brokers'] if row['brokers'] is not None else '-':>7}")
    lines.append("node q/s on one GOV2-size shard: " + ", ".join(
        f"{e} {m} {r:,.0f}" for e, rates in measured.items() for m, r in rates.items()))
    lines.append(f"broker q/s: {broker_rate:,.0f} ({broker_source})")
    results_store.write_summary(result, lines, args.out)
    if args.record:
        results_store.record(
            "deployment_model", args.record, result, gpu="none",
            produced_by="`bench/deployment_model.py`",
            machine="a model, no machine: node rates measured on the machine kind, the broker's "
                    "where it ran",
            protocol=f"GOV2 x {args.scale:g} in shards of 1 to {args.max_gov2s_per_node} GOV2s, "
                     f"peaks {args.peaks} q/s, {args.headroom}x headroom and a spare replica per "
                     "shard")

if __name__ == "__main__":
    main()
