#!/usr/bin/python3
"""End-to-end test of the Python client (clients/python/tandem_client) against the real tandem-server.

Builds a ten-document index with tandem-index, starts tandem-server on an ephemeral port over it and
calls every RPC through TandemClient: Search in each mode, with text and with weighted terms, BM25
parameters, filters on attributes, SearchBatch, SearchStream, GetIndexInfo, health, the standing
queries (subscribe, list, match, unsubscribe, watch), writes (write, index_documents, delete,
refresh, flush, index_stats), and the errors (INVALID_ARGUMENT, ...).

    /usr/bin/python3 tests/python_client_test.py --server-binary build/tools/tandem-server \
        --index-binary build/tools/tandem-index

Exits 77 (ctest SKIP_RETURN_CODE) when grpcio or protobuf cannot be imported.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

# First: clients/python on the path, or exit 77 (SKIP) without grpcio and protobuf.
import client_env  # noqa: F401
import grpc  # noqa: E402
import tandem_testing  # noqa: E402
from tandem_client import Query, SearchResult, TandemClient, TandemError  # noqa: E402

# The i-th line has external id str(i + 1). After analysis (stop words, Porter stemming):
#   "bear": 1, 2, 3, 7;  "black": 1, 3, 8;  "salmon": 2, 4;  "river": 2, 4, 9.
DOCUMENTS = [
    "The black bear attacks a hiker in the forest",                  # 1
    "A brown bear eats salmon in the river",                         # 2
    "Forest rangers warn hikers about black bears near the trail",   # 3
    "Salmon fishing on the river at dawn",                           # 4
    "A cat sleeps on the warm windowsill",                           # 5
    "Telescopes observe distant galaxies at night",                  # 6
    "The bear",                                                      # 7
    "Black coffee in the morning, black coffee at night, black coffee all day long",  # 8
    "The river floods the valley every spring after the snow melts",  # 9
    "Hubble telescope images of distant galaxies",                   # 10
]
BEAR = {"1", "2", "3", "7"}
BLACK = {"1", "3", "8"}

ARGS: argparse.Namespace
INDEX: Path
SERVER: tandem_testing.LocalServer
CLIENT: TandemClient
_TMP: tempfile.TemporaryDirectory


def setUpModule() -> None:
    global INDEX, SERVER, CLIENT, _TMP
    _TMP = tempfile.TemporaryDirectory(prefix="tandem-python-client-test-")
    INDEX = tandem_testing.build_index(ARGS.index_binary, DOCUMENTS, _TMP.name)
    SERVER = tandem_testing.LocalServer(ARGS.server_binary, INDEX)
    SERVER.start()
    # Generous: a loaded 2-core machine may take a while to open the index.
    CLIENT = TandemClient(SERVER.address, timeout=60.0)
    CLIENT.wait_until_serving(timeout=120.0)


def tearDownModule() -> None:
    CLIENT.close()
    code = SERVER.stop()
    _TMP.cleanup()
    if code not in (0, -15):  # a clean drain on SIGTERM, or death by it
        raise AssertionError(f"tandem-server exited with {code}:\n{SERVER.output()}")


def ids(result: SearchResult) -> list[str]:
    return [h.external_id for h in result.hits]


def build_beir_index(directory: str, corpus_text: str, *flags: str) -> Path:
    """The index of a BEIR corpus.jsonl holding `corpus_text`, built in `directory` with `flags`."""
    corpus = Path(directory) / "corpus.jsonl"
    corpus.write_text(corpus_text, encoding="utf-8")
    index = Path(directory) / "index"
    subprocess.run([ARGS.index_binary, "build", "--input", str(corpus), "--format", "beir",
                    "--output", str(index), "--quiet", *flags],
                   check=True, capture_output=True)
    return index


class OwnServerTest(unittest.TestCase):
    """Tests that need a server of their own: setUpClass calls serve(), which starts it with a
    client that waits until it serves; both stop after the class, and `tmp`, where set, goes."""

    tmp: tempfile.TemporaryDirectory | None = None

    @classmethod
    def serve(cls, index, extra_args=()) -> None:
        cls.server = tandem_testing.LocalServer(ARGS.server_binary, index, extra_args=extra_args)
        cls.server.start()
        cls.client = TandemClient(cls.server.address, timeout=60.0)
        cls.client.wait_until_serving(timeout=120.0)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()
        if cls.tmp is not None:
            cls.tmp.cleanup()


class RankingChecks(unittest.TestCase):
    def assertRanked(self, result: SearchResult) -> None:
        """Scores non-increasing, ties by increasing docid, every score finite and positive."""
        for h in result.hits:
            self.assertTrue(math.isfinite(h.score) and h.score > 0, h)
        for a, b in zip(result.hits, result.hits[1:]):
            self.assertTrue(a.score > b.score or (a.score == b.score and a.docid < b.docid), (a, b))


class SearchTest(RankingChecks):
    def test_or_returns_documents_with_any_term(self):
        r = CLIENT.search("black bear", mode="or", k=10)
        self.assertEqual(set(ids(r)), BEAR | BLACK)
        self.assertRanked(r)
        # Documents 1 and 3 hold both terms and must outrank those holding one.
        self.assertEqual(set(ids(r)[:2]), {"1", "3"})
        self.assertEqual(r.stats.executed_mode, "or")
        self.assertEqual(set(r.stats.terms), {"black", "bear"})
        self.assertEqual(r.stats.engine, "cpu")

    def test_and_returns_documents_with_every_term(self):
        r = CLIENT.search("black bears", mode="and")
        self.assertEqual(set(ids(r)), BEAR & BLACK)
        self.assertRanked(r)
        self.assertEqual(r.stats.executed_mode, "and")

    def test_and_or_falls_back_to_or_when_and_is_short(self):
        short = CLIENT.search("black bear", mode="and_or", k=5)
        self.assertEqual(short.stats.executed_mode, "or")
        self.assertEqual(len(short.hits), 5)
        enough = CLIENT.search("black bear", mode="and_or", k=2)
        self.assertEqual(enough.stats.executed_mode, "and")
        self.assertEqual(set(ids(enough)), {"1", "3"})

    def test_k_limits_hits_and_keeps_the_best(self):
        full = CLIENT.search("black bear river salmon", k=100)
        top3 = CLIENT.search("black bear river salmon", k=3)
        self.assertEqual(len(top3.hits), 3)
        self.assertEqual(top3.hits, full.hits[:3])

    def test_default_k_is_ten(self):
        r = CLIENT.search("the black bear river salmon galaxies telescope cat coffee spring")
        self.assertEqual(len(r.hits), 10)

    def test_no_matching_term_gives_no_hits(self):
        r = CLIENT.search("zebra", mode="or")
        self.assertEqual(r.hits, [])

    def test_terms_query_matches_text_query(self):
        by_text = CLIENT.search("bears", mode="or")
        by_terms = CLIENT.search(terms=["bear"], mode="or")
        self.assertEqual(by_terms.hits, by_text.hits)

    def test_term_weight_scales_scores(self):
        one = CLIENT.search(terms=[("bear", 1.0)])
        two = CLIENT.search(terms={"bear": 2.0})
        self.assertEqual(ids(one), ids(two))
        for a, b in zip(one.hits, two.hits):
            self.assertAlmostEqual(b.score, 2 * a.score, delta=1e-5 * b.score)

    def test_bm25_parameters_change_scores(self):
        default = CLIENT.search("bear")
        # b = 0: no length normalization, so every document with tf 1 scores the same.
        flat = CLIENT.search("bear", b=0.0)
        self.assertEqual(len({h.score for h in flat.hits}), 1, flat.hits)
        self.assertGreater(len({h.score for h in default.hits}), 1, default.hits)
        # ... and equal scores are ranked by docid.
        self.assertEqual([h.docid for h in flat.hits], sorted(h.docid for h in flat.hits))
        # k1 = 0: term frequency no longer counts: "black" thrice in document 8 scores as once.
        k1_zero = CLIENT.search("black", k1=0.0, b=0.0)
        self.assertEqual(len({h.score for h in k1_zero.hits}), 1, k1_zero.hits)

    def test_engine_hints(self):
        cpu = CLIENT.search("black bear", engine="cpu")
        self.assertEqual(cpu.stats.engine, "cpu")
        if "gpu" in CLIENT.info().engines:
            gpu = CLIENT.search("black bear", engine="gpu")
            self.assertEqual(gpu.stats.engine, "gpu")
            self.assertEqual(ids(gpu), ids(cpu))
        else:
            with self.assertRaises(TandemError) as cm:
                CLIENT.search("black bear", engine="gpu")
            self.assertEqual(cm.exception.code, "FAILED_PRECONDITION")

    def test_request_id_is_echoed(self):
        self.assertEqual(CLIENT.search("bear", request_id="q-42").request_id, "q-42")

    def test_stats_are_consistent(self):
        s = CLIENT.search("black bear").stats
        self.assertGreater(s.postings_decoded, 0)
        self.assertGreaterEqual(s.total_micros, s.execution_micros)


class ErrorTest(unittest.TestCase):
    def assertInvalid(self, **kwargs) -> TandemError:
        with self.assertRaises(TandemError) as cm:
            CLIENT.search(**kwargs)
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT", cm.exception)
        self.assertEqual(cm.exception.grpc_code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(cm.exception.message)
        return cm.exception

    def test_k_too_large(self):
        e = self.assertInvalid(text="bear", k=10001)
        self.assertIn("k", e.message)

    def test_bm25_out_of_range(self):
        self.assertInvalid(text="bear", k1=-1.0)
        self.assertInvalid(text="bear", b=1.5)

    def test_negative_term_weight(self):
        self.assertInvalid(terms=[("bear", -1.0)])

    def test_query_too_long(self):
        self.assertInvalid(text="bear " * 2000)  # 10000 bytes, past the default 4096

    def test_client_side_errors(self):
        with self.assertRaises(ValueError):
            CLIENT.search(text="bear", terms=["bear"])
        with self.assertRaises(ValueError):
            CLIENT.search()
        with self.assertRaises(ValueError):
            CLIENT.search("bear", mode="xor")
        with self.assertRaises(ValueError):
            CLIENT.search("bear", k=-1)

    def test_wait_for_ready_until_the_deadline(self):
        # wait_for_ready holds the call until a connection that never comes, so the deadline decides.
        with TandemClient("127.0.0.1:1", timeout=0.5, wait_for_ready=True) as dead:
            with self.assertRaises(TandemError) as cm:
                dead.search("bear")
            self.assertEqual(cm.exception.code, "DEADLINE_EXCEEDED")

    def test_unreachable_server(self):
        # Port 1 on loopback: nothing listens there, so the call fails fast.
        with TandemClient("127.0.0.1:1", timeout=30.0) as dead:
            with self.assertRaises(TandemError) as cm:
                dead.search("bear")
            self.assertEqual(cm.exception.code, "UNAVAILABLE")


class SlowServerTest(OwnServerTest):
    """A second server whose every query waits 30 s first (--testing_query_delay), for deadlines."""

    @classmethod
    def setUpClass(cls):
        cls.serve(INDEX, extra_args=["--testing_query_delay=30s"])

    def test_deadline_stops_the_query(self):
        start = time.monotonic()
        with self.assertRaises(TandemError) as cm:
            self.client.search("bear", timeout=0.5)
        self.assertEqual(cm.exception.code, "DEADLINE_EXCEEDED")
        self.assertLess(time.monotonic() - start, 20)

    def test_stream_deadline(self):
        with self.assertRaises(TandemError) as cm:
            list(self.client.stream(["bear", "salmon"], timeout=0.5))
        self.assertEqual(cm.exception.code, "DEADLINE_EXCEEDED")


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


def make_certificates(directory: str) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=tandem test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"),
                      ("client", "extendedKeyUsage=clientAuth")):
        Path(directory, f"{name}.ext").write_text(ext + "\n")
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=tandem {name}",
                 cwd=directory)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
                 cwd=directory)


@unittest.skipIf(shutil.which("openssl") is None, "openssl is needed to make test certificates")
class TlsTest(unittest.TestCase):
    """A third server with TLS that requires client certificates (mutual TLS)."""

    @classmethod
    def setUpClass(cls):
        cls.certs = tempfile.mkdtemp(prefix="certs-", dir=_TMP.name)
        make_certificates(cls.certs)
        c = Path(cls.certs)
        cls.server = tandem_testing.LocalServer(
            ARGS.server_binary, INDEX,
            extra_args=[f"--tls_cert={c / 'server.pem'}", f"--tls_key={c / 'server.key'}",
                        f"--tls_client_ca={c / 'ca.pem'}"])
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def client(self, **kwargs) -> TandemClient:
        return TandemClient(self.server.address, timeout=60.0, **kwargs)

    def test_mutual_tls(self):
        c = Path(self.certs)
        with self.client(tls=True, root_certificates=c / "ca.pem", private_key=c / "client.key",
                         certificate_chain=(c / "client.pem").read_bytes()) as client:
            client.wait_until_serving(timeout=120.0)
            self.assertEqual(client.search("black bear").hits, CLIENT.search("black bear").hits)

    def test_client_without_certificate_is_refused(self):
        with self.client(tls=True, root_certificates=Path(self.certs) / "ca.pem") as client:
            with self.assertRaises(TandemError) as cm:
                client.search("bear")
            self.assertEqual(cm.exception.code, "UNAVAILABLE")

    def test_plaintext_client_is_refused(self):
        with self.client() as client:
            with self.assertRaises(TandemError) as cm:
                client.search("bear")
            self.assertEqual(cm.exception.code, "UNAVAILABLE")

    def test_certificates_without_tls_are_a_usage_error(self):
        with self.assertRaises(ValueError):
            TandemClient("127.0.0.1:1", root_certificates=b"x")


class BatchTest(RankingChecks):
    def test_batch_matches_single_searches_and_isolates_errors(self):
        results = CLIENT.search_batch(
            [
                "black bear",
                {"text": "salmon river", "mode": "and"},
                Query(terms=["bear"], k=2),
                {"text": "bear", "k": 20000},
            ],
            mode="or",
        )
        self.assertEqual(len(results), 4)
        self.assertEqual(results[0].hits, CLIENT.search("black bear", mode="or").hits)
        self.assertEqual(set(ids(results[1])), {"2", "4"})
        self.assertEqual(results[2].hits, CLIENT.search(terms=["bear"], k=2).hits)
        self.assertIsInstance(results[3], TandemError)
        self.assertEqual(results[3].code, "INVALID_ARGUMENT")

    def test_empty_batch(self):
        self.assertEqual(CLIENT.search_batch([]), [])


class StreamTest(RankingChecks):
    def test_stream_answers_in_order_and_survives_a_bad_query(self):
        queries = ["black bear", {"text": "bear", "k": 0xFFFFFFFF}, "salmon",
                   {"text": "river", "mode": "and"}]
        results = list(CLIENT.stream(iter(queries), k=5))
        self.assertEqual(len(results), 4)
        self.assertEqual([r.request_id for r in results], ["0", "1", "2", "3"])
        self.assertEqual(results[0].hits, CLIENT.search("black bear", k=5).hits)
        self.assertIsInstance(results[1], TandemError)
        self.assertEqual(results[1].code, "INVALID_ARGUMENT")
        self.assertEqual(set(ids(results[2])), {"2", "4"})
        self.assertEqual(set(ids(results[3])), {"2", "4", "9"})

    def test_stream_of_many_queries(self):
        words = ["bear", "black", "salmon", "river", "galaxies", "coffee", "zebra"]
        n = 200
        results = list(CLIENT.stream(({"text": words[i % len(words)], "request_id": f"r{i}"}
                                      for i in range(n))))
        self.assertEqual([r.request_id for r in results], [f"r{i}" for i in range(n)])
        for r in results:
            self.assertIsInstance(r, SearchResult)
            self.assertRanked(r)

    def test_bad_query_object_is_raised_to_the_caller(self):
        with self.assertRaises(TypeError):
            list(CLIENT.stream(["bear", 42]))


class InfoAndHealthTest(unittest.TestCase):
    def test_info(self):
        info = CLIENT.info()
        self.assertEqual(info.documents, len(DOCUMENTS))
        self.assertGreater(info.terms, 10)
        self.assertGreaterEqual(info.postings, info.terms)
        self.assertGreater(info.index_bytes, 0)
        self.assertIn("cpu", info.engines)
        self.assertEqual(info.source_format, "lines")
        self.assertTrue(info.index_id)
        self.assertTrue(info.codec)
        self.assertGreater(info.average_document_length, 0)

    def test_health(self):
        self.assertEqual(CLIENT.health(), "SERVING")

    def test_health_of_unknown_service(self):
        with self.assertRaises(TandemError) as cm:
            CLIENT.health("no.such.Service")
        self.assertEqual(cm.exception.code, "NOT_FOUND")


class LoadIndexTest(OwnServerTest):
    """load_index switches the node to another index; a missing one raises and changes nothing."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tandem-python-load-test-")
        cls.first = build_beir_index(cls.tmp.name, '{"_id": "a", "text": "a black bear"}\n')
        cls.serve(cls.first)

    def test_load_switches_and_errors_leave_the_serving_index(self):
        self.assertEqual(self.client.info().generation, 1)
        self.assertEqual(ids(self.client.search("bear")), ["a"])
        second_dir = Path(self.tmp.name) / "second"
        second_dir.mkdir()
        second = build_beir_index(str(second_dir), '{"_id": "b", "text": "a brown bear"}\n'
                                                   '{"_id": "c", "text": "a cat"}\n')
        loaded = self.client.load_index(str(second))
        self.assertEqual(loaded.generation, 2)
        self.assertEqual(loaded.documents, 2)
        self.assertEqual(ids(self.client.search("bear")), ["b"])
        info = self.client.info()
        self.assertEqual((info.generation, info.documents, info.directory), (2, 2, str(second)))
        with self.assertRaises(TandemError) as cm:
            self.client.load_index(str(second_dir / "missing"))
        self.assertEqual(cm.exception.code, "NOT_FOUND", cm.exception)
        self.assertEqual(ids(self.client.search("bear")), ["b"])


class StoredFieldsTest(OwnServerTest):
    """Hits carry the stored fields a query asks for, here BEIR titles."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tandem-python-fields-test-")
        cls.serve(build_beir_index(
            cls.tmp.name,
            '{"_id": "a", "title": "Black bears", "text": "a black bear by the river"}\n'
            '{"_id": "b", "text": "a brown bear without a title"}\n',
            "--store-text"))

    def test_fields_asked_for_come_with_each_hit(self):
        hits = {h.external_id: h
                for h in self.client.search("bear", fields=["title", "author"]).hits}
        self.assertEqual(hits["a"].fields, (("title", "Black bears"),))
        self.assertEqual(hits["a"].field("title"), "Black bears")
        self.assertEqual(hits["b"].fields, ())
        self.assertIsNone(hits["b"].field("title"))
        everything = {h.external_id: h.fields for h in self.client.search("bear", fields=["*"]).hits}
        # --store-text keeps the indexed text (title and text) as the field "text".
        self.assertEqual(everything["a"], (("title", "Black bears"),
                                           ("text", "Black bears\na black bear by the river")))
        self.assertEqual(everything["b"], (("text", "a brown bear without a title"),))
        self.assertTrue(all(h.fields == () for h in self.client.search("bear").hits))
        batch = self.client.search_batch([{"text": "black", "fields": ["title"]}])
        self.assertEqual(batch[0].hits[0].field("title"), "Black bears")

    def test_snippets_highlight_the_query_terms(self):
        hits = {h.external_id: h for h in self.client.search("black bear", snippet_bytes=200).hits}
        a = hits["a"].snippet
        self.assertEqual(a.text, "Black bears a black bear by the river")
        self.assertEqual([a.text[s:e] for s, e in a.highlights],
                         ["Black", "bears", "black", "bear"])
        self.assertEqual(a.marked(), "[Black] [bears] a [black] [bear] by the river")
        self.assertFalse(a.starts_inside or a.ends_inside)
        self.assertEqual(hits["b"].snippet.marked(), "a brown [bear] without a title")
        short = self.client.search("river", snippet_bytes=12).hits[0].snippet
        self.assertLessEqual(len(short.text.encode()), 12)
        self.assertEqual(short.marked(), "...by the [river]")
        self.assertTrue(all(h.snippet is None for h in self.client.search("bear").hits))
        with self.assertRaises(TandemError) as cm:
            self.client.search("bear", snippet_bytes=1001)
        self.assertIn("snippet_bytes must be at most 1000", cm.exception.message)

    def test_bad_field_lists(self):
        with self.assertRaises(ValueError):
            self.client.search("bear", fields="title")
        with self.assertRaises(TandemError) as cm:
            self.client.search("bear", fields=["title"] * 33)
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")
        self.assertIn("at most 32", cm.exception.message)


class FilterTest(OwnServerTest):
    """Filters on the documents' attributes (a BEIR corpus indexed with --attributes): the hits are
    the unfiltered ranking restricted to the documents the filter allows, scores unchanged."""

    # id: (text, attributes); "year" is an integer field, "label" and "topic" keywords.
    CORPUS = {
        "a": ("black bear in the forest", {"label": "spam", "year": 2001, "topic": "grain"}),
        "b": ("brown bear eats salmon", {"label": "ham", "year": 2002, "topic": "wheat"}),
        "c": ("black bears near the trail", {"label": "spam", "year": 2003, "topic": "corn"}),
        "d": ("salmon in the river", {"label": "ham", "year": 2002, "topic": "grain"}),
        "e": ("the bear", {"label": "spam", "year": 2004}),
        "f": ("black coffee and a bear", {"year": 2002, "topic": "wheat"}),
    }

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tandem-python-filter-test-")
        cls.serve(build_beir_index(
            cls.tmp.name,
            "".join(json.dumps({"_id": i, "text": text, **attributes}) + "\n"
                    for i, (text, attributes) in cls.CORPUS.items()),
            "--attributes", "label,year:integer,topic"))

    def restricted(self, text: str, allowed) -> list:
        """The unfiltered ranking of `text`, kept to the documents whose attributes `allowed`."""
        return [h for h in self.client.search(text, k=100).hits
                if allowed(self.CORPUS[h.external_id][1])]

    def test_filtered_hits_are_the_ranking_restricted_to_the_filter(self):
        spam = self.restricted("black bear", lambda a: a.get("label") == "spam")
        self.assertEqual({h.external_id for h in spam}, {"a", "c", "e"})
        for f in ("label = spam", ("label", "=", "spam"), {"not": ("label", "!=", "spam")}):
            self.assertEqual(self.client.search("black bear", k=100, filter=f).hits, spam, f)
        recent_spam = self.restricted("black bear",
                                      lambda a: a.get("label") == "spam" and a["year"] >= 2002)
        tree = {"and": [("label", "=", "spam"), ("year", ">=", 2002)]}
        self.assertEqual(self.client.search("black bear", k=100, filter=tree).hits, recent_spam)
        self.assertEqual(
            self.client.search("black bear", k=100, filter="label = spam AND year >= 2002").hits,
            recent_spam)
        either = self.restricted("bear salmon", lambda a: a.get("topic") in ("grain", "corn")
                                 or 2004 <= a["year"] <= 2005)
        self.assertEqual([h.external_id for h in either], ["d", "e", "a", "c"])
        tree = {"or": [("topic", "in", ["grain", "corn"]), ("year", "range", 2004, None)]}
        self.assertEqual(self.client.search("bear salmon", k=100, filter=tree).hits, either)
        self.assertEqual(self.client.search("bear salmon", k=2, filter=tree).hits, either[:2])

    def test_batch_and_stream_carry_the_filter(self):
        spam = self.client.search("bear", filter="label = spam").hits
        ham = self.client.search("bear", filter=("label", "=", "ham")).hits
        self.assertTrue(spam and ham)
        batch = self.client.search_batch(["bear", {"text": "bear", "filter": ("label", "=", "ham")}],
                                         filter="label = spam")
        self.assertEqual([r.hits for r in batch], [spam, ham])
        stream = list(self.client.stream([Query(text="bear", filter={"not": ("label", "=", "ham")}),
                                          {"text": "bear", "filter": "label = ham"}]))
        not_ham = self.restricted("bear", lambda a: a.get("label") != "ham")
        self.assertEqual([r.hits for r in stream], [not_ham[:10], ham])

    def test_a_filter_that_allows_nothing_gives_no_hits(self):
        self.assertEqual(self.client.search("bear", filter="label = spam AND label = ham").hits, [])

    def test_errors(self):
        for f, message in (("colour = red", 'unknown field "colour"'),
                           (("label", "=", "eggs"), 'unknown value "eggs"'),
                           ("label = ", "filter"),
                           (("label", ">=", 3), "keyword field")):
            with self.assertRaises(TandemError, msg=f) as cm:
                self.client.search("bear", filter=f)
            self.assertEqual(cm.exception.code, "INVALID_ARGUMENT", f)
            self.assertIn(message, cm.exception.message, f)
        # The index of the other tests has no attributes.
        with self.assertRaises(TandemError) as cm:
            CLIENT.search("bear", filter="label = spam")
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")
        self.assertIn("stores no attributes", cm.exception.message)
        for bad in (("label", "~", "spam"), {"and": []}, ("year", ">=", "2002"), 42,
                    [("label", "=", "spam"), ("year", ">=", 2002)]):
            with self.assertRaises(ValueError, msg=bad):
                self.client.search("bear", filter=bad)


class SubscriptionTest(OwnServerTest):
    """Standing queries: subscribe by text and by dict, list, match, unsubscribe, watch."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tandem-python-subscriptions-test-")
        cls.serve(INDEX, extra_args=["--subscriptions", str(Path(cls.tmp.name) / "subscriptions")])

    def tearDown(self):
        for s in self.client.list_subscriptions():
            self.client.unsubscribe(s)

    MAILS = [
        {"id": "m1", "text": "Black bears near the river", "attributes": {"year": 2003, "label": "ham"}},
        {"id": "m2", "text": "salmon", "attributes": {"year": 1999, "label": "spam", "score": 0.9}},
        {"id": "m3", "text": "a bear", "attributes": {"year": 2001.5}},
        {"text": "nothing here"},
    ]

    def test_subscribe_list_match_unsubscribe(self):
        alice = self.client.subscribe("alice", 'terms contains "bears" AND year >= 2001')
        self.assertEqual(alice.interface, "alice")
        self.assertEqual(alice.predicate_text, 'terms contains "bear" AND year >= 2001')  # stemmed
        legal = self.client.subscribe("legal", {"filters": [
            [("label", "=", "spam")],
            [{"name": "score", "op": ">", "value": 0.5}, ("year", "<", 2000)],
        ]})
        self.assertEqual(legal.predicate_text, 'label = "spam" OR (score > 0.5 AND year < 2000)')
        self.assertGreater(legal.id, alice.id)

        listed = self.client.list_subscriptions()
        self.assertEqual([s.id for s in listed], [alice.id, legal.id])
        from tandem_client import Constraint
        self.assertEqual(listed[0].filters, ((Constraint("terms", "contains", "bear"),
                                              Constraint("year", ">=", 2001)),))
        self.assertEqual(listed[1].filters[1], (Constraint("score", ">", 0.5),
                                                Constraint("year", "<", 2000)))
        self.assertEqual([s.interface for s in self.client.list_subscriptions("legal")], ["legal"])
        self.assertEqual(self.client.list_subscriptions("nobody"), [])

        result = self.client.match(self.MAILS)
        self.assertEqual(result.engine, "cpu")
        self.assertEqual([(m.document_id, m.interfaces) for m in result],
                         [("m1", ("alice",)), ("m2", ("legal",)), ("m3", ("alice",)), ("3", ())])

        self.client.unsubscribe(alice)
        self.assertEqual([m.interfaces for m in self.client.match(self.MAILS)],
                         [(), ("legal",), (), ()])
        with self.assertRaises(TandemError) as cm:
            self.client.unsubscribe(alice.id)
        self.assertEqual(cm.exception.code, "NOT_FOUND")

    def test_errors(self):
        with self.assertRaises(TandemError) as cm:
            self.client.subscribe("alice", "year >=")
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")
        self.assertIn("predicate_text", cm.exception.message)
        with self.assertRaises(TandemError) as cm:
            self.client.subscribe("alice", {"filters": [[("label", "<", "spam")]]})
        self.assertIn("compares numbers", cm.exception.message)
        with self.assertRaises(TandemError) as cm:
            self.client.match([{"id": "x", "attributes": {"terms": "no"}}])
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")
        self.assertIn('document 1 (id "x")', cm.exception.message)
        for bad in ({"filters": [[("year", "~", 1)]]}, {"filters": [[("year", ">=", True)]]},
                    {"filters": [[("year", ">=")]]}, {"filter": []}):
            with self.assertRaises(ValueError, msg=bad):
                self.client.subscribe("alice", bad)
        with self.assertRaises(ValueError):
            self.client.match([{"id": "x", "attributes": {"n": 2**63}}])
        with self.assertRaises(ValueError):
            self.client.match([{"id": "x", "body": "typo"}])
        self.assertEqual(self.client.list_subscriptions(), [])

    def test_watch_receives_the_matched_documents(self):
        self.client.subscribe("bob", "year >= 2001")
        with self.client.watch("bob") as events:
            self.client.match(self.MAILS)
            first, second = next(events), next(events)
        self.assertEqual((first.document_id, first.attributes, first.dropped),
                         ("m1", {"label": "ham", "year": 2003}, 0))
        self.assertEqual(second.document_id, "m3")
        self.assertEqual(second.attributes, {"year": 2001.5})
        with self.assertRaises(TandemError) as cm:
            self.client.watch("")
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")


class WriteTest(OwnServerTest):
    """write, index_documents and delete stream to the node's index; refresh makes them searchable,
    flush writes a commit point, index_stats counts; bad operations are refused one by one."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tandem-python-write-test-")
        cls.serve(build_beir_index(cls.tmp.name,
                                   '{"_id": "a", "title": "Bears", "text": "a black bear"}\n'
                                   '{"_id": "b", "text": "a brown bear"}\n'),
                  ["--gpu", "off", "--refresh-interval", "0",
                   "--max-receive-message-bytes", str(8 << 20)])

    def test_large_documents_go_in_messages_under_the_nodes_limit(self):
        # 12 documents of 1 MiB: one message of 256 operations would be 12 MiB, over the node's 8.
        docs = [{"id": f"big{i}", "text": " ".join(["mammoth"] * (1 << 17))} for i in range(12)]
        self.assertEqual(self.client.index_documents(docs).acknowledged, 12)
        self.client.refresh()
        self.assertEqual(len(self.client.search("mammoth", k=20).hits), 12)
        self.assertEqual(self.client.delete([d["id"] for d in docs]).acknowledged, 12)
        self.client.refresh()

    def test_bad_operations_raise_before_they_are_sent(self):
        before = self.client.index_stats().last_sequence
        for bad in ([{"index": {"id": "x"}, "delete": "x"}], [{}], [{"delete": 7}], ["x"],
                    [{"delete": "x", "version": -1}], [{"delete": "x", "version": True}]):
            with self.assertRaises(ValueError, msg=bad):
                self.client.write(bad)
        with self.assertRaises(ValueError):
            self.client.index_documents([{"id": "x", "body": "typo"}])
        with self.assertRaises(ValueError):
            self.client.index_documents([{"id": "x", "attributes": {"year": 2.5}}])
        with self.assertRaises(ValueError):
            self.client.write([], batch_size=0)
        # The operations before a bad one are written.
        with self.assertRaises(ValueError) as cm:
            self.client.write([{"delete": "nosuchid"}, {"delete": None}])
        self.assertIn("operation 1", str(cm.exception))
        self.assertIn("1 acknowledged", str(cm.exception))
        self.assertEqual(self.client.index_stats().last_sequence, before + 1)

    def test_writes_refresh_flush_and_stats(self):
        self.client.refresh()  # whatever another test of the class left buffered
        result = self.client.index_documents([
            {"id": "c", "text": "a bear cub", "fields": {"title": "Cub"},
             "attributes": {"year": 2001, "topics": ["bears", "cubs"], "wild": True}},
            {"id": "", "text": "no id"},
            {"id": "a", "text": "a polar bear", "fields": {"title": "Polar"}, "version": 5},
        ], batch_size=2)
        self.assertEqual((result.acknowledged, result.stale, result.not_found, result.refused),
                         (2, 0, 0, 1))
        self.assertEqual(len(result.errors), 1)
        self.assertEqual((result.errors[0].operation, result.errors[0].code), (1, "INVALID_ARGUMENT"))
        stats = self.client.index_stats()
        self.assertTrue(stats.writable)
        self.assertEqual(stats.buffered_operations, 2)
        self.assertEqual(stats.last_sequence, result.last_sequence)
        # Not searchable before a refresh (--refresh-interval 0).
        self.assertEqual(ids(self.client.search("cub")), [])
        refreshed = self.client.refresh()
        self.assertEqual(refreshed.documents, 3)
        hits = self.client.search("cub", fields=["title"]).hits
        self.assertEqual([(h.external_id, h.field("title")) for h in hits], [("c", "Cub")])
        self.assertEqual(ids(self.client.search("polar")), ["a"])
        self.assertEqual(ids(self.client.search("black")), [])

        stale = self.client.write([{"index": {"id": "a", "text": "an old black bear"}, "version": 4}])
        self.assertEqual((stale.acknowledged, stale.stale), (1, 1))
        deleted = self.client.delete(["b", "nosuchdoc"])
        self.assertEqual((deleted.acknowledged, deleted.not_found), (2, 1))
        self.assertEqual(self.client.delete("c").acknowledged, 1)
        self.client.refresh()
        self.assertEqual(sorted(ids(self.client.search("bear"))), ["a"])

        generation = self.client.flush()
        self.assertGreater(generation, 0)
        stats = self.client.index_stats()
        self.assertEqual((stats.commit_generation, stats.documents, stats.buffered_operations),
                         (generation, 1, 0))


class ReadOnlyWriteTest(OwnServerTest):
    """A read-only node refuses writes with FAILED_PRECONDITION and says it is not writable."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tandem-python-read-only-test-")
        cls.serve(build_beir_index(cls.tmp.name, '{"_id": "a", "text": "a black bear"}\n'),
                  ["--read-only"])

    def test_writes_are_refused(self):
        for call in (lambda: self.client.index_documents([{"id": "b", "text": "a bear"}]),
                     lambda: self.client.delete("a"), self.client.refresh, self.client.flush):
            with self.assertRaises(TandemError) as cm:
                call()
            self.assertEqual(cm.exception.code, "FAILED_PRECONDITION", cm.exception)
            self.assertIn("read-only", cm.exception.message)
        self.assertFalse(self.client.index_stats().writable)
        self.assertEqual(ids(self.client.search("bear")), ["a"])


def main() -> int:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--server-binary", default=os.environ.get("TANDEM_SERVER"), required=False)
    parser.add_argument("--index-binary", default=os.environ.get("TANDEM_INDEX"), required=False)
    ARGS, rest = parser.parse_known_args()
    if not ARGS.server_binary or not ARGS.index_binary:
        parser.error("--server-binary and --index-binary (or $TANDEM_SERVER, $TANDEM_INDEX) are required")
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
