#!/usr/bin/python3
"""bench/pisa_side_by_side.py over made-up work directories: the rows of one process per engine,
the rows of interleaved rounds (the median round's figures and ratio, every round listed, a round
without Tandem's file left out), and the two layouts side by side for different k."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                       "pisa_side_by_side.py")


def write_pisa(path, algorithm, usecs):
    with open(path, "w") as f:
        f.write("algorithm\tqid\trun\tusec\n")
        for i, u in enumerate(usecs):
            f.write(f"{algorithm}\t{i}\t1\t{u}\n")


def write_tandem(path, rows):
    """rows: [(mode, k, or_algorithm, and_block_max, mean_seconds)]."""
    results = []
    for mode, k, algorithm, block_max, mean in rows:
        results.append({"mode": mode, "k": k, "or_algorithm": algorithm,
                        "and_block_max": block_max,
                        "latency_seconds": {"mean": mean, "p50": mean, "p99": mean, "max": mean},
                        "postings_decoded_per_query": 10.0, "documents_scored_per_query": 5.0,
                        "verified_against_reference": 3})
    with open(path, "w") as f:
        json.dump({"machine": {"commit": "abc"}, "index": {}, "queries": {"count": 2},
                   "results": results}, f)


def summarize(work):
    out = os.path.join(work, "summary.json")
    p = subprocess.run([sys.executable, SUMMARY, "--work", work, "--workload", "test", "--out", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return json.load(open(out)), p.stdout


class SummaryTest(unittest.TestCase):
    def test_one_process_per_engine(self):
        with tempfile.TemporaryDirectory() as w:
            write_pisa(f"{w}/pisa-lat-k10.tsv", "maxscore", [20, 20])
            write_tandem(f"{w}/tandem-lat-k10.json", [("or", 10, "maxscore", None, 10e-6)])
            result, _ = summarize(w)
            (row,) = result["latency_ms"]
            self.assertAlmostEqual(row["tandem_over_pisa_mean"], 0.5)
            self.assertNotIn("rounds", row)

    def test_query_by_query_split(self):
        with tempfile.TemporaryDirectory() as w:
            # 20 queries: PISA takes 10 ms on query 0 and 19, 1 ms on the rest. Tandem takes 15 ms
            # on those two (1.5x) and 0.5 ms on the rest (0.5x): 18 of 20 faster. Tandem's TSV
            # also holds another k and another algorithm, which must not be mixed in.
            pisa_us = [10000 if q in (0, 19) else 1000 for q in range(20)]
            with open(f"{w}/pisa-lat-k10.tsv", "w") as f:
                f.write("algorithm\tqid\trun\tusec\n")
                for q, u in enumerate(pisa_us):
                    f.write(f"maxscore\t{q}\t1\t{u}\nmaxscore\t{q}\t2\t{u}\n")
            with open(f"{w}/tandem-lat-k10.tsv", "w") as f:
                f.write("mode\tk\talgorithm\tqid\trun\tusec\n")
                for q, u in enumerate(pisa_us):
                    mine = 1.5 * u if u == 10000 else 0.5 * u
                    f.write(f"or\t10\tmaxscore\t{q}\t1\t{mine}\n")
                    f.write(f"or\t1000\tmaxscore\t{q}\t1\t{100 * u}\n")
                    f.write(f"or\t10\twand\t{q}\t1\t{100 * u}\n")
            write_tandem(f"{w}/tandem-lat-k10.json", [("or", 10, "maxscore", None, 2e-3)])
            result, table = summarize(w)
            (row,) = result["latency_ms"]
            b = row["by_query"]
            self.assertEqual(b["queries"], 20)
            self.assertAlmostEqual(b["tandem_faster_share"], 0.9)
            self.assertAlmostEqual(b["heaviest_tenth_tandem_over_pisa"], 1.5)
            self.assertAlmostEqual(b["heaviest_tenth_share_of_pisa_time"], 20 / 38)
            self.assertAlmostEqual(b["rest_tandem_over_pisa"], 0.5)
            self.assertIn("90% faster | heaviest tenth  1.50x (53% of PISA's time) | the rest  0.50x",
                          table)

    def test_interleaved_rounds_take_the_median_round(self):
        with tempfile.TemporaryDirectory() as w:
            # Tandem / PISA by round: 1.5, 0.5, 1.0, and a fourth round without Tandem's file.
            for r, pisa_us, tandem_s in ((1, 20, 30e-6), (2, 40, 20e-6), (3, 10, 10e-6)):
                write_pisa(f"{w}/pisa-lat-k10-r{r}-wand.tsv", "wand", [pisa_us, pisa_us])
                write_tandem(f"{w}/tandem-lat-k10-r{r}-wand.json", [("or", 10, "wand", None, tandem_s)])
            write_pisa(f"{w}/pisa-lat-k10-r4-wand.tsv", "wand", [1, 1])
            # Another algorithm's round files must not be taken for this one's.
            write_pisa(f"{w}/pisa-lat-k10-r1-block_max_wand.tsv", "block_max_wand", [5, 5])
            write_tandem(f"{w}/tandem-lat-k10-r1-block_max_wand.json",
                         [("or", 10, "block-max-wand", None, 50e-6)])
            result, table = summarize(w)
            rows = {r["pisa_algorithm"]: r for r in result["latency_ms"]}
            self.assertEqual(set(rows), {"wand", "block_max_wand"})
            wand = rows["wand"]
            self.assertAlmostEqual(wand["tandem_over_pisa_mean"], 1.0)
            self.assertAlmostEqual(wand["pisa"]["mean"], 0.010)
            self.assertEqual([r["round"] for r in wand["rounds"]], [1, 2, 3])
            self.assertAlmostEqual(rows["block_max_wand"]["tandem_over_pisa_mean"], 10.0)
            self.assertIn("3 rounds: 0.50x-1.50x", table)
            self.assertIn("(interleaved)", table)

    def test_layouts_for_different_k(self):
        with tempfile.TemporaryDirectory() as w:
            write_pisa(f"{w}/pisa-lat-k1000.tsv", "ranked_and", [100, 100])
            write_tandem(f"{w}/tandem-lat-k1000.json", [("and", 1000, "", False, 50e-6)])
            write_pisa(f"{w}/pisa-lat-k10-r1-ranked_and.tsv", "ranked_and", [10, 10])
            write_tandem(f"{w}/tandem-lat-k10-r1-ranked_and.json", [("and", 10, "", False, 20e-6)])
            result, _ = summarize(w)
            ratios = {r["k"]: r["tandem_over_pisa_mean"] for r in result["latency_ms"]}
            self.assertEqual(set(ratios), {10, 1000})
            self.assertAlmostEqual(ratios[10], 2.0)
            self.assertAlmostEqual(ratios[1000], 0.5)

    def test_throughput_share_by_share(self):
        with tempfile.TemporaryDirectory() as w:
            # Process t ran share t: 4 queries of 1 ms (1,000 q/s) for 0, of 4 ms (250 q/s) for
            # 1..9 and of 8 ms (125 q/s) for 10: a sort of the files by name (0, 1, 10, 2, ...)
            # would put share 10 third.
            for t in range(11):
                usec = 1000 if t == 0 else 8000 if t == 10 else 4000
                write_pisa(f"{w}/pisa-tput-{t}.tsv", "maxscore", [usec] * 4)
            with open(f"{w}/pisa-tput.json", "w") as f:
                json.dump({"wall_seconds": 1.0, "processes": 11, "passes": 4}, f)
            per_thread = [500.0] + [250.0] * 9 + [500.0]
            with open(f"{w}/tandem-tput.json", "w") as f:
                json.dump({"machine": {"commit": "abc"}, "queries": {"count": 44},
                           "index": {"postings_memory": "huge-pages",
                                     "postings_huge_page_bytes": 4096},
                           "results": [{"mode": "or", "qps_all_threads": 3000.0,
                                        "qps_summed_over_threads": sum(per_thread),
                                        "qps_per_thread": per_thread, "threads": 11,
                                        "verified_against_reference": 50}]}, f)
            result, table = summarize(w)
            tput = result["throughput"]
            self.assertEqual(tput["pisa"]["qps_per_process"], [1000.0] + [250.0] * 9 + [125.0])
            self.assertAlmostEqual(tput["pisa"]["qps_sum_of_processes"], 1000.0 + 9 * 250.0 + 125.0)
            ratios = tput["tandem_over_pisa_per_share"]
            self.assertEqual(len(ratios), 11)
            self.assertAlmostEqual(ratios[0], 0.5)   # share 0: 500 against 1,000
            self.assertAlmostEqual(ratios[-1], 4.0)  # share 10: 500 against 125
            self.assertAlmostEqual(ratios[5], 1.0)
            self.assertIn("Tandem / PISA: 0.50x-4.00x, median 1.00x", table)
            self.assertEqual(tput["tandem"]["postings_memory"], "huge-pages")
            self.assertEqual(tput["tandem"]["postings_huge_page_bytes"], 4096)
            self.assertEqual(tput["tandem"]["verified_against_reference"], 50)

    def test_throughput_of_tandem_as_processes(self):
        with tempfile.TemporaryDirectory() as w:
            # PISA: 11 processes at 250 q/s. Tandem's processes: 500 q/s for share 0 and 10, 250
            # for the rest; its threads in one process sum to 2,200 q/s.
            for t in range(11):
                write_pisa(f"{w}/pisa-tput-{t}.tsv", "maxscore", [4000] * 4)
            with open(f"{w}/pisa-tput.json", "w") as f:
                json.dump({"wall_seconds": 1.0, "processes": 11, "passes": 4}, f)
            for t in range(11):
                with open(f"{w}/tandem-tput-proc-{t}.json", "w") as f:
                    json.dump({"machine": {"commit": "abc"}, "queries": {"count": 4},
                               "results": [{"mode": "or", "qps_summed_over_threads":
                                            500.0 if t in (0, 10) else 250.0,
                                            "threads": 1, "verified_against_reference": 4}]}, f)
            with open(f"{w}/tandem-tput-proc.json", "w") as f:
                json.dump({"wall_seconds": 2.0, "processes": 11, "passes": 4}, f)
            with open(f"{w}/tandem-tput.json", "w") as f:
                json.dump({"machine": {"commit": "abc"}, "queries": {"count": 44}, "index": {},
                           "results": [{"mode": "or", "qps_all_threads": 2000.0,
                                        "qps_summed_over_threads": 2200.0,
                                        "qps_per_thread": [200.0] * 11, "threads": 11}]}, f)
            with open(f"{w}/tandem-tput-alone.json", "w") as f:
                json.dump({"queries": {"count": 4},
                           "results": [{"mode": "or", "qps_summed_over_threads": 300.0}]}, f)
            result, table = summarize(w)
            procs = result["throughput"]["tandem_processes"]
            self.assertEqual(procs["processes"], 11)
            # Share 10 is the last process, not the third (numeric order, not name order).
            self.assertEqual(procs["qps_per_process"][-1], 500.0)
            self.assertEqual(procs["qps_per_process"][2], 250.0)
            self.assertAlmostEqual(procs["qps_sum_of_processes"], 3250.0)
            self.assertAlmostEqual(procs["qps_wall_clock"], 44 * 4 / 2.0)
            self.assertEqual(procs["verified_against_reference"], 44)
            self.assertAlmostEqual(procs["kept_speed_under_load"], 3250.0 / (300.0 * 11))
            self.assertAlmostEqual(result["throughput"]["tandem_processes_over_pisa"], 3250.0 / 2750.0)
            self.assertEqual(result["throughput"]["tandem_processes_over_pisa_per_share"],
                             [1.0] * 9 + [2.0] * 2)
            self.assertEqual(result["throughput"]["tandem_over_pisa_per_share"], [0.8] * 11)
            self.assertIn("Tandem's threads in one process / its processes 0.68x", table)
            self.assertNotIn("qps_every_process_at_work", procs)  # no longer run

    def test_every_process_at_work_from_the_longer_run(self):
        with tempfile.TemporaryDirectory() as w:
            # 2 processes of 4 queries. PISA: 4 passes in 10 s, 10 passes in 16 s: the 6 extra
            # passes of 8 queries took 6 s, 8 q/s. Tandem's processes: 4 passes in 5 s, 10 in 8 s:
            # 16 q/s. Tandem's threads: 12 q/s by the wall clock.
            for tag, passes, wall in (("", 4, 10.0), ("-long", 10, 16.0)):
                for t in range(2):
                    write_pisa(f"{w}/pisa-tput{tag}-{t}.tsv", "maxscore", [100000] * 4)
                with open(f"{w}/pisa-tput{tag}.json", "w") as f:
                    json.dump({"wall_seconds": wall, "processes": 2, "passes": passes}, f)
            for tag, passes, wall in (("", 4, 5.0), ("-long", 10, 8.0)):
                for t in range(2):
                    with open(f"{w}/tandem-tput-proc{tag}-{t}.json", "w") as f:
                        json.dump({"queries": {"count": 4},
                                   "results": [{"mode": "or", "qps_summed_over_threads": 20.0 + t,
                                                "verified_against_reference": 1}]}, f)
                with open(f"{w}/tandem-tput-proc{tag}.json", "w") as f:
                    json.dump({"wall_seconds": wall, "processes": 2, "passes": passes}, f)
            with open(f"{w}/tandem-tput.json", "w") as f:
                json.dump({"machine": {"commit": "abc"}, "queries": {"count": 8}, "index": {},
                           "results": [{"mode": "or", "qps_all_threads": 12.0,
                                        "qps_summed_over_threads": 18.0,
                                        "qps_per_thread": [9.0, 9.0], "threads": 2}]}, f)
            result, table = summarize(w)
            tput = result["throughput"]
            self.assertAlmostEqual(tput["pisa"]["qps_every_process_at_work"], 8.0)
            self.assertAlmostEqual(tput["pisa"]["qps_wall_clock"], 8 * 4 / 10.0)
            self.assertEqual(tput["pisa"]["longer_run"]["passes"], 10)
            self.assertAlmostEqual(tput["tandem_processes"]["qps_every_process_at_work"], 16.0)
            self.assertEqual(tput["tandem_processes"]["longer_run"]["qps_per_process"], [20.0, 21.0])
            self.assertAlmostEqual(tput["tandem_processes_over_pisa_every_process_at_work"], 2.0)
            self.assertAlmostEqual(tput["tandem_wall_clock_over_pisa_every_process_at_work"], 1.5)
            self.assertIn("PISA 8 q/s, Tandem's processes 16 (2.00x); Tandem's threads by the wall "
                          "clock 12 (1.50x)", table)

    def test_a_longer_run_that_took_no_longer_gives_no_rate(self):
        with tempfile.TemporaryDirectory() as w:
            for tag, passes in (("", 4), ("-long", 10)):
                write_pisa(f"{w}/pisa-tput{tag}-0.tsv", "maxscore", [1000] * 4)
                with open(f"{w}/pisa-tput{tag}.json", "w") as f:
                    json.dump({"wall_seconds": 3.0, "processes": 1, "passes": passes}, f)
            result, _ = summarize(w)
            self.assertNotIn("qps_every_process_at_work", result["throughput"]["pisa"])

    def test_extra_passes_faster_than_their_own_queries_give_no_rate(self):
        with tempfile.TemporaryDirectory() as w:
            # One process at 1,000 q/s (4 queries of 1 ms); the 6 extra passes of 4 queries would
            # have taken 0.024 s, but the longer run took only 0.01 s more: its start was faster.
            for tag, passes, wall in (("", 4, 1.0), ("-long", 10, 1.01)):
                write_pisa(f"{w}/pisa-tput{tag}-0.tsv", "maxscore", [1000] * 4)
                with open(f"{w}/pisa-tput{tag}.json", "w") as f:
                    json.dump({"wall_seconds": wall, "processes": 1, "passes": passes}, f)
            result, _ = summarize(w)
            self.assertNotIn("qps_every_process_at_work", result["throughput"]["pisa"])
            self.assertEqual(result["throughput"]["pisa"]["longer_run"]["passes"], 10)

    def test_record_stores_the_summary_as_a_part_of_the_machine_kinds_run(self):
        with tempfile.TemporaryDirectory() as w, tempfile.TemporaryDirectory() as results:
            write_pisa(f"{w}/pisa-lat-k10.tsv", "maxscore", [20, 20])
            write_tandem(f"{w}/tandem-lat-k10.json", [("or", 10, "maxscore", None, 10e-6)])
            p = subprocess.run([sys.executable, SUMMARY, "--work", w, "--workload", "synth",
                                "--record", "nvidia-h200"], capture_output=True, text=True,
                               env=dict(os.environ, TANDEM_RESULTS_DIR=results))
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(f"{results}/cpu_vs_pisa.json") as f:
                run = json.load(f)["runs"]["h200"]
            self.assertEqual(run["commit"], "abc")
            self.assertIsNone(run["gpu"])
            self.assertAlmostEqual(run["parts"]["synth"]["latency_ms"][0]["tandem_over_pisa_mean"],
                                   0.5)
            with open(f"{results}/README.md") as f:
                self.assertIn("cpu_vs_pisa.json", f.read())


if __name__ == "__main__":
    unittest.main()
