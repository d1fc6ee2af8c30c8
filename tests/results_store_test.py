#!/usr/bin/python3
"""bench/results_store.py and bench/results_readme.py on a scratch results directory: a benchmark's
own JSON merged as one machine kind's run, a run recorded in parts, the README generated from the
JSON, and --check failing on a stale README, a run without its commit and too many files."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
STORE = os.path.join(BENCH, "results_store.py")
README = os.path.join(BENCH, "results_readme.py")


class ResultsStoreTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.inputs = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.env = dict(os.environ, TANDEM_RESULTS_DIR=self.dir)

    def tearDown(self):
        self.tmp.cleanup()
        self.inputs.cleanup()

    def run_tool(self, *args):
        return subprocess.run([sys.executable, *args], env=self.env, capture_output=True,
                              text=True)

    def bench_json(self, name, content):
        path = os.path.join(self.inputs.name, name)
        with open(path, "w") as f:
            json.dump(content, f)
        return path

    def results(self, benchmark):
        with open(os.path.join(self.dir, f"{benchmark}.json")) as f:
            return json.load(f)

    def test_merge_takes_machine_commit_and_date_from_the_benchmark(self):
        path = self.bench_json("q.json", {
            "benchmark": "query", "results": [{"qps": 1000}],
            "machine": {"commit": "abc123", "cores": 16, "cpu": "Xeon", "gpu": "NVIDIA H100",
                        "host": "vm", "time": "2026-12-01T00:00:00Z"}})
        p = self.run_tool(STORE, "merge", "--benchmark", "query", "--machine", "nvidia-h100-x1",
                          "--title", "Query", "--produced-by", "`tandem-bench-query`",
                          "--protocol", "every query once", "--headline", "1,000 q/s", path)
        self.assertEqual(p.returncode, 0, p.stderr)
        data = self.results("query")
        run = data["runs"]["h100"]
        self.assertEqual(run["machine"], "Xeon, 16 cores")
        self.assertEqual(run["gpu"], "NVIDIA H100")
        self.assertEqual(run["commit"], "abc123")
        self.assertEqual(run["date"], "2026-12-01T00:00:00Z")
        self.assertEqual(run["protocol"], "every query once")
        self.assertEqual(run["results"], [{"qps": 1000}])
        self.assertEqual(run["machine_details"]["host"], "vm")
        with open(os.path.join(self.dir, "README.md")) as f:
            readme = f.read()
        self.assertIn("| [Query](query.json) | `tandem-bench-query` | **h100** 1,000 q/s |", readme)
        self.assertEqual(self.run_tool(README, "--check").returncode, 0)

    def test_a_newer_run_replaces_the_kind_and_keeps_the_others(self):
        for kind, qps in (("dev", 10), ("h200", 20), ("h200", 30)):
            path = self.bench_json(f"{kind}{qps}.json", {"qps": qps, "commit": "c", "date": "d"})
            p = self.run_tool(STORE, "merge", "--benchmark", "b", "--machine", kind, "--gpu",
                              "none", "--title", "B", "--produced-by", "x", "--protocol", "p",
                              path)
            self.assertEqual(p.returncode, 0, p.stderr)
        runs = self.results("b")["runs"]
        self.assertEqual(list(runs), ["dev", "h200"])
        self.assertEqual(runs["h200"]["qps"], 30)
        self.assertIsNone(runs["h200"]["gpu"])

    def test_parts_give_the_run_its_newest_commit(self):
        for part, commit, date in (("synth", "old", "2026-12-01"), ("wikipedia", "new", "2026-12-02")):
            path = self.bench_json(part, {"commit": commit, "date": date, "rows": [part]})
            p = self.run_tool(STORE, "merge", "--benchmark", "side", "--machine", "h200",
                              "--part", part, "--gpu", "none", "--machine-desc", "16 cores",
                              "--protocol", "side by side", "--title", "S", "--produced-by", "x",
                              path)
            self.assertEqual(p.returncode, 0, p.stderr)
        run = self.results("side")["runs"]["h200"]
        self.assertEqual((run["commit"], run["date"]), ("new", "2026-12-02"))
        self.assertEqual(sorted(run["parts"]), ["synth", "wikipedia"])
        self.assertEqual(run["parts"]["synth"]["commit"], "old")

    def test_a_run_without_a_commit_is_refused(self):
        path = self.bench_json("nocommit.json", {"qps": 1, "date": "d"})
        p = self.run_tool(STORE, "merge", "--benchmark", "b", "--machine", "dev", "--gpu", "none",
                          "--protocol", "p", path)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no commit", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "b.json")))

    def test_check_finds_a_stale_readme_a_missing_field_and_too_many_files(self):
        path = self.bench_json("ok.json", {"qps": 1, "commit": "c", "date": "d"})
        p = self.run_tool(STORE, "merge", "--benchmark", "b", "--machine", "dev", "--gpu", "none",
                          "--title", "B", "--produced-by", "x", "--protocol", "p",
                          "--headline", "1 q/s", path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.run_tool(README, "--check").returncode, 0)
        with open(os.path.join(self.dir, "README.md"), "a") as f:
            f.write("edited by hand\n")
        p = self.run_tool(README, "--check")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not what bench/results_readme.py generates", p.stderr)
        self.assertEqual(self.run_tool(README).returncode, 0)
        data = self.results("b")
        del data["runs"]["dev"]["commit"]
        with open(os.path.join(self.dir, "b.json"), "w") as f:
            json.dump(data, f)
        self.run_tool(README)
        p = self.run_tool(README, "--check")
        self.assertEqual(p.returncode, 1)
        self.assertIn("runs.dev lacks commit", p.stderr)
        data["runs"]["dev"]["commit"] = "c"
        with open(os.path.join(self.dir, "b.json"), "w") as f:
            json.dump(data, f)
        for i in range(30):
            open(os.path.join(self.dir, f"figure{i}.png"), "w").close()
        self.run_tool(README)
        p = self.run_tool(README, "--check")
        self.assertEqual(p.returncode, 1)
        self.assertIn("more than 30", p.stderr)

    def test_a_headline_too_long_for_the_table_is_reported(self):
        path = self.bench_json("long.json", {"qps": 1, "commit": "c", "date": "d"})
        p = self.run_tool(STORE, "merge", "--benchmark", "b", "--machine", "dev", "--gpu", "none",
                          "--title", "B", "--produced-by", "x", "--protocol", "p",
                          "--headline", "x" * 250, path)
        self.assertEqual(p.returncode, 1)
        self.assertIn("over 200 characters", p.stderr)


if __name__ == "__main__":
    unittest.main()
