#!/usr/bin/python3
"""End-to-end test of tandem-loadgen against the real tandem-server.

Builds a small index, starts tandem-server on an ephemeral port, and runs short closed-loop rows, an
open-loop sweep and a run with queries the server rejects; checks the table, the JSON and the counts by
status code. A few seconds of load in all.

    /usr/bin/python3 tests/loadgen_test.py --server-binary build/tools/tandem-server \
        --index-binary build/tools/tandem-index --loadgen-binary build/bench/tandem-loadgen
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python"))

import tandem_testing  # noqa: E402  (standard library only)

VOCABULARY = [
    "bear", "black", "brown", "salmon", "river", "forest", "hiker", "trail", "ranger", "coffee",
    "galaxy", "telescope", "night", "spring", "valley", "snow", "cat", "window", "morning", "dawn",
]

ARGS: argparse.Namespace
SERVER: tandem_testing.LocalServer
_TMP: tempfile.TemporaryDirectory


def setUpModule() -> None:
    global SERVER, _TMP
    _TMP = tempfile.TemporaryDirectory(prefix="tandem-loadgen-test-")
    rng = random.Random(7)
    docs = [" ".join(rng.choices(VOCABULARY, k=rng.randint(3, 30))) for _ in range(300)]
    index = tandem_testing.build_index(ARGS.index_binary, docs, _TMP.name)
    SERVER = tandem_testing.LocalServer(ARGS.server_binary, index)
    SERVER.start()


def tearDownModule() -> None:
    SERVER.stop()
    _TMP.cleanup()


def write(name: str, data: bytes) -> str:
    path = Path(_TMP.name) / name
    path.write_bytes(data)
    return str(path)


def loadgen(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [ARGS.loadgen_binary, "--server", SERVER.address, "--timeout", "60", "--connect-timeout", "120",
           *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
                             f"\nserver:\n{SERVER.output()}")
    return result


class LoadgenTest(unittest.TestCase):
    def setUp(self):
        # id:priority:query, one line in ISO-8859-1 ("café"), which must reach the server as UTF-8.
        self.queries = write("queries.txt", b"1:1:black bear\n2:2:salmon river\n3:1:caf\xe9 forest trail\n"
                                            b"4:3:galaxy telescope night\n")
        self.json_path = str(Path(_TMP.name) / f"{self.id()}.json")

    def read_json(self) -> dict:
        with open(self.json_path) as f:
            return json.load(f)

    def assertLatencies(self, row: dict) -> None:
        lat = row["latency_ms"]
        order = [lat[k] for k in ("p50", "p90", "p95", "p99", "p99_9", "max")]
        self.assertEqual(order, sorted(order), lat)
        self.assertGreater(lat["p50"], 0)
        self.assertLessEqual(lat["mean"], lat["max"])

    def test_closed_loop_rows(self):
        result = loadgen("--queries", self.queries, "--mode", "and_or", "--k", "5", "--concurrency", "1,3",
                         "--num_queries", "60", "--warmup", "0.2", "--json-out", self.json_path)
        self.assertIn("p99.9_ms", result.stdout)
        self.assertIn("conc=1", result.stdout)
        self.assertIn("conc=3", result.stdout)
        doc = self.read_json()
        for key in ("commit", "hostname", "timestamp", "parameters", "server_index"):
            self.assertTrue(doc[key], key)
        self.assertEqual(doc["parameters"]["mode"], "and_or")
        self.assertEqual(doc["parameters"]["num_queries_in_file"], 4)
        self.assertEqual(doc["server_index"]["documents"], 300)
        self.assertEqual([r["concurrency"] for r in doc["rows"]], [1, 3])
        for row in doc["rows"]:
            self.assertEqual(row["loop"], "closed")
            self.assertEqual(row["sent"], 60)
            self.assertEqual(row["status_counts"], {"OK": 60})
            self.assertGreater(row["achieved_qps"], 0)
            self.assertLessEqual(row["server_mean_us"]["execution"], row["server_mean_us"]["total"])
            self.assertLatencies(row)

    def test_open_loop_sweep(self):
        loadgen("--queries", self.queries, "--rates", "20,40", "--duration", "1.5", "--warmup", "0.3",
                "--json-out", self.json_path)
        rows = self.read_json()["rows"]
        self.assertEqual([(r["loop"], r["rate"]) for r in rows], [("open", 20), ("open", 40)])
        for row in rows:
            # Poisson arrivals: expected rate * 1.5 queries; allow for the variance of a short run.
            expected = row["rate"] * 1.5
            self.assertGreater(row["sent"], expected / 4, row)
            self.assertLess(row["sent"], expected * 3, row)
            self.assertEqual(row["status_counts"], {"OK": row["sent"]})
            self.assertGreater(row["offered_qps"], 0)
            self.assertLatencies(row)

    def test_rejected_queries_are_counted_by_status(self):
        # In file order with one client: valid, too long (INVALID_ARGUMENT), valid, too long, ...
        queries = write("mixed.tsv", b"q1\tblack bear\nq2\t" + b"bear " * 2000 + b"\n")
        loadgen("--queries", queries, "--concurrency", "1", "--num_queries", "20", "--warmup", "0",
                "--json-out", self.json_path)
        row = self.read_json()["rows"][0]
        self.assertEqual(row["status_counts"], {"OK": 10, "INVALID_ARGUMENT": 10})

    def test_stream_transport(self):
        # Over SearchStream calls the node answers each stream in order; every answer must name the
        # query sent in its place (else MISMATCHED_RESPONSE), and rejected queries are answered
        # with their status while the stream goes on.
        queries = write("mixed_stream.tsv", b"q1\tblack bear\nq2\t" + b"bear " * 2000 + b"\n")
        loadgen("--queries", queries, "--transport", "stream", "--streams", "2", "--concurrency", "1",
                "--num_queries", "20", "--warmup", "0", "--json-out", self.json_path)
        doc = self.read_json()
        self.assertEqual(doc["parameters"]["transport"], "stream")
        self.assertEqual(doc["parameters"]["streams_per_channel"], 2)
        self.assertEqual(doc["rows"][0]["status_counts"], {"OK": 10, "INVALID_ARGUMENT": 10})

        result = loadgen("--queries", self.queries, "--mode", "and_or", "--transport", "stream",
                         "--streams", "3", "--concurrency", "8", "--rates", "40", "--num_queries", "60",
                         "--warmup", "0.2", "--json-out", self.json_path)
        self.assertIn("transport: stream (3 SearchStream calls on each of 2 channels)", result.stdout)
        rows = self.read_json()["rows"]
        self.assertEqual([r["loop"] for r in rows], ["closed", "open"])
        for row in rows:
            self.assertEqual(row["sent"], 60, row)
            self.assertEqual(row["status_counts"], {"OK": 60}, row)
            self.assertLatencies(row)

    def test_bad_arguments_fail_cleanly(self):
        missing = loadgen("--queries", "/nonexistent/queries.txt", check=False)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("/nonexistent/queries.txt", missing.stderr)
        bad_rate = loadgen("--queries", self.queries, "--rates", "10,abc", check=False)
        self.assertEqual(bad_rate.returncode, 2)
        self.assertIn("abc", bad_rate.stderr)
        bad_transport = loadgen("--queries", self.queries, "--transport", "quic", check=False)
        self.assertEqual(bad_transport.returncode, 2)
        self.assertIn('"quic"', bad_transport.stderr)
        bad_streams = loadgen("--queries", self.queries, "--transport", "stream", "--streams", "0",
                              check=False)
        self.assertEqual(bad_streams.returncode, 2)
        self.assertIn("--streams", bad_streams.stderr)

    def test_unreachable_server_fails(self):
        cmd = [ARGS.loadgen_binary, "--server", "127.0.0.1:1", "--queries", self.queries,
               "--connect_timeout", "1"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("127.0.0.1:1", result.stderr)


def main() -> int:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--server-binary", default=os.environ.get("TANDEM_SERVER"))
    parser.add_argument("--index-binary", default=os.environ.get("TANDEM_INDEX"))
    parser.add_argument("--loadgen-binary", default=os.environ.get("TANDEM_LOADGEN"))
    ARGS, rest = parser.parse_known_args()
    if not (ARGS.server_binary and ARGS.index_binary and ARGS.loadgen_binary):
        parser.error("--server-binary, --index-binary and --loadgen-binary are required")
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
