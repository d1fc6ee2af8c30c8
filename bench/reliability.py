#!/usr/bin/python3
"""The node's reliability figures in one run, as data: tampered posting lists, overload, memory
under idle watchers and under distinct filters, and /metrics under half-open connections.

  bench/reliability.py BIN_DIR --out FILE [--trials 200] [--overload-seconds 10] [--workdir DIR]
  bench/reliability.py --tandem-server P --tandem-index P --tandem-cli P --tandem-loadgen P
      --out FILE

BIN_DIR is a build directory (binaries under tools/ and bench/) or a directory holding all four.
Prints a table and writes FILE: machine, gpu (null: the run is CPU-only), commit, date, protocol
and one object per measurement, each with its own protocol sentence. Store it with
  bench/results_store.py merge --benchmark reliability --machine dev FILE --headline '...'
Exits non-zero when the setup is broken (a binary missing, a clean index not answering, a
tampered copy whose checksums do not verify), never because of what the node did under test.
About 2-3 minutes on 2 cores. Needs /usr/bin/python3 with python3-grpcio and protobuf, taskset, and
libxxhash.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "clients", "python"))
sys.path.insert(0, HERE)

import index_tamper  # noqa: E402
from tandem_testing import LocalServer  # noqa: E402
from tandem_client import TandemClient, TandemError  # noqa: E402

BINARIES = ("tandem-server", "tandem-index", "tandem-cli", "tandem-loadgen")


class Node(LocalServer):
    """tandem-server (CPU only) with its RSS, optionally pinned with taskset."""

    def __init__(self, binary, index, args=(), cpus=None):
        super().__init__(binary, index, extra_args=["--gpu", "off", *args])
        if cpus is not None:
            self._cmd = ["taskset", "-c", cpus, *self._cmd]

    def start(self):
        super().start()
        self.client = TandemClient(self.address, timeout=30)
        self.client.wait_until_serving(30)
        return self.address

    def rss_mb(self, key="VmRSS"):
        with open(f"/proc/{self._proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
        raise RuntimeError(f"no {key} for the node")

    def stop(self, timeout=30.0):
        if getattr(self, "client", None):
            self.client.close()
        return super().stop(timeout)


def words(rng, vocab, weights, n):
    return " ".join(rng.choices(vocab, cum_weights=weights, k=n))


def zipf_vocab(size):
    vocab = [f"w{i}" for i in range(size)]
    cum, total = [], 0.0
    for i in range(size):
        total += 1.0 / (i + 1)
        cum.append(total)
    return vocab, cum


def build(tandem_index, work, name, docs, rng, vocab_size, doc_words, tags=0):
    """A synthetic index: Zipf words; with tags, a keyword attribute `tag` of that many values."""
    vocab, cum = zipf_vocab(vocab_size)
    path = os.path.join(work, name + ".jsonl")
    with open(path, "w") as f:
        for d in range(docs):
            doc = {"_id": str(d), "title": "", "text": words(rng, vocab, cum, doc_words)}
            if tags:
                doc["tag"] = f"t{d % tags}"
            f.write(json.dumps(doc) + "\n")
    out = os.path.join(work, name)
    cmd = [tandem_index, "build", "--input", path, "--format", "beir", "--output", out,
           "--threads", "2", "--quiet"] + (["--attributes", "tag:keyword"] if tags else [])
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


# -- 1. tampered posting lists ---------------------------------------------------------------------

def tampered_lists(bins, work, trials, rng):
    index = build(bins["tandem-index"], work, "small", 4000, rng, 3000, 40, tags=2000)
    index_tamper.check_frame(os.path.join(index, "postings.bin"))
    clean = Node(bins["tandem-server"], index, ["--threads", "1"])
    clean.start()
    node = Node(bins["tandem-server"], index, ["--threads", "1"])
    node.start()
    # The node answers tandem-cli too: a setup without a working CLI fails here, not in a trial.
    subprocess.run([bins["tandem-cli"], "--server", node.address, "info"], check=True,
                   capture_output=True, timeout=30)
    counts = {"refused_at_load": 0, "ok_same_answers": 0, "ok_different_answers": 0,
              "data_loss": 0, "other_error": 0, "crash": 0}
    query_codes, load_codes, by_form, samples = {}, {}, {}, []
    restarts = inspect_damage = 0
    for trial in range(trials):
        form = "full" if trial % 2 == 0 else "compact"
        kind = "byte" if trial % 4 < 2 else "frequency"
        copy = os.path.join(work, f"tampered-{trial:04d}")
        shutil.copytree(index, copy)
        while True:  # full-form lists are the ~130 most frequent terms; the rest are compact
            term = f"w{rng.randrange(0, 120) if form == 'full' else rng.randrange(200, 3000)}"
            info = index_tamper.lookup(bins["tandem-index"], copy, term)
            if info and (info["df"] > index_tamper.BLOCK) == (form == "full"):
                change = index_tamper.tamper(copy, info, kind, rng)
                if change:
                    break
        inspect = subprocess.run([bins["tandem-index"], "inspect", copy], capture_output=True,
                                 text=True)
        if "checksums  OK" not in inspect.stdout:
            raise RuntimeError(f"tampered copy {copy} fails its checksums:\n{inspect.stdout}")
        inspect_damage += inspect.returncode != 0
        change.update(term=term, df=info["df"], inspect_finds_damage=inspect.returncode != 0)
        others = [t for t in ("w0", "w1", "w2") if t != term]
        queries = [("or", [term], 10), ("or", [term, others[0]], 1000),
                   ("and", [term, others[0]], 10), ("and", [term, others[1]], 1000)]
        try:
            node.client.load_index(copy, timeout=60)
            outcome = None
        except TandemError as e:
            load_codes[e.code] = load_codes.get(e.code, 0) + 1
            outcome = "crash" if not node.running() else "refused_at_load"
        codes = []
        if outcome is None:
            for mode, terms, k in queries:
                try:
                    got = node.client.search(terms=terms, mode=mode, k=k, engine="cpu", timeout=10)
                    want = clean.client.search(terms=terms, mode=mode, k=k, engine="cpu")
                    same = [(h.docid, h.score) for h in got.hits] == \
                        [(h.docid, h.score) for h in want.hits]
                    codes.append("OK" if same else "OK_DIFFERENT")
                except TandemError as e:
                    codes.append(e.code if node.running() else "CRASH")
                if not node.running():
                    codes[-1] = "CRASH"
                    break
            for c in codes:
                query_codes[c] = query_codes.get(c, 0) + 1
            outcome = ("crash" if "CRASH" in codes else
                       "other_error" if set(codes) - {"OK", "OK_DIFFERENT", "DATA_LOSS"} else
                       "data_loss" if "DATA_LOSS" in codes else
                       "ok_different_answers" if "OK_DIFFERENT" in codes else "ok_same_answers")
        counts[outcome] += 1
        key = f"{form} list, {kind}"
        by_form.setdefault(key, {}).setdefault(outcome, 0)
        by_form[key][outcome] += 1
        if outcome in ("crash", "other_error") or \
                sum(x["outcome"] == outcome for x in samples) < 3:
            samples.append(dict(change, outcome=outcome, query_codes=codes))
        if outcome == "crash":
            restarts += 1
            node.stop()
            node = Node(bins["tandem-server"], index, ["--threads", "1"])
            node.start()
    node.stop()
    clean.stop()
    return {
        "protocol": (f"{trials} trials on copies of a 4,000-document synthetic index (pfor): each "
                     "changes one byte of one posting list (half the trials a full-form list of "
                     "more than 128 postings, half a compact one; half any byte of the list, half "
                     "a byte of a frequency section), XOR a random non-zero value, and re-frames "
                     "postings.bin and the manifest so every checksum verifies (tandem-index "
                     "inspect says so); one node (--threads 1) switches to the copy with "
                     "LoadIndex, then answers OR [t] k 10, OR [t, w] k 1,000, AND [t, w] k 10 and "
                     "AND [t, w'] k 1,000 on the CPU engine, compared with a second node serving "
                     "the clean index; a trial's outcome is its worst: crash (the node died; it "
                     "is restarted), other error, DATA_LOSS, OK with different answers, OK."),
        "trials": trials, "outcomes": counts, "by_list": by_form,
        "load_refusal_codes": load_codes, "query_outcomes": query_codes,
        "inspect_finds_damage": inspect_damage,
        "node_restarts_after_crash": restarts, "examples": samples[:40],
    }


# -- 2. overload -----------------------------------------------------------------------------------

def loadgen(bins, work, address, queries, args):
    out = os.path.join(work, "loadgen.json")
    cmd = ["taskset", "-c", "1", bins["tandem-loadgen"], "--server", address, "--queries", queries,
           "--query-format", "colon", "--mode", "or", "--k", "10", "--shuffle", "--channels", "4",
           "--cq-threads", "2", "--json-out", out, *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    rows = json.load(open(out))["rows"]
    return [{"loop": r["loop"], "concurrency": r.get("concurrency"),
             "offered_qps": round(r["offered_qps"], 1), "sent": r["sent"],
             "achieved_qps": round(r["achieved_qps"], 1), "window_s": round(r["window_s"], 3),
             "ok_qps": round(r["status_counts"].get("OK", 0) / r["window_s"], 1),
             "status_counts": r["status_counts"],
             "ok_latency_ms": {k: round(r["latency_ms"][k], 3) for k in ("p50", "p99", "max")}
             if r.get("latency_ms") else None} for r in rows]


def overload(bins, work, seconds, rng):
    index = build(bins["tandem-index"], work, "medium", 200000, rng, 50000, 60)
    queries = os.path.join(work, "queries.txt")
    with open(queries, "w") as f:
        for i in range(3000):
            f.write(f"{i}:{' '.join(f'w{rng.randrange(400)}' for _ in range(rng.randint(2, 4)))}\n")
    node = Node(bins["tandem-server"], index, ["--threads", "1"], cpus="0")
    node.start()
    result = {"transports": {}}
    for transport in ("unary", "stream"):
        t = ["--transport", transport]
        loadgen(bins, work, node.address, queries, t + ["--concurrency", "1", "--duration", "2",
                                                         "--warmup", "0"])
        closed = loadgen(bins, work, node.address, queries,
                         t + ["--concurrency", "1,2,4", "--duration", "4", "--warmup", "1"])
        capacity = max(r["ok_qps"] for r in closed)
        if capacity <= 0:
            raise RuntimeError(f"the node answered nothing closed loop ({transport}): {closed}")
        rates = [int(capacity * f) for f in (0.7, 3)]
        rows = loadgen(bins, work, node.address, queries,
                       t + ["--rates", ",".join(map(str, rates)), "--duration", str(seconds),
                            "--warmup", "0", "--timeout", "10"])
        low, high = rows
        refused = low["status_counts"].get("RESOURCE_EXHAUSTED", 0)
        result["transports"][transport] = {
            "capacity_qps": capacity, "closed_loop": closed, "open_loop": rows,
            "refused_share_at_0_7x": round(refused / max(low["sent"], 1), 4),
            "failed_share_at_0_7x": round(1 - low["status_counts"].get("OK", 0)
                                          / max(low["sent"], 1), 4),
            "served_share_of_capacity_at_3x": round(high["ok_qps"] / capacity, 4),
        }
    result["rss_mb"] = {"end": node.rss_mb(), "peak": node.rss_mb("VmHWM")}
    result["node_alive"] = node.running()
    node.stop()
    result["protocol"] = (
        "A CPU-only node (--gpu off, --threads 1, queue 4) pinned to CPU 0 serves a "
        "200,000-document synthetic index; tandem-loadgen, pinned to CPU 1, sends OR top-10 "
        "queries of 2-4 of the 400 most frequent terms. Per transport (unary Search calls; "
        "--transport stream, 16 SearchStreams a channel, 4 channels): capacity is the best "
        f"closed-loop rate at 1, 2 and 4 clients (4 s each); then {seconds} s open loop Poisson "
        "at 0.7x and 3x capacity (10 s deadline). Refused share at 0.7x: RESOURCE_EXHAUSTED over "
        "sent; served share at 3x: the OK answers' rate over capacity.")
    return result


# -- 3. idle watchers ------------------------------------------------------------------------------

def idle_watchers(bins, work, rng, watchers=16, documents=1536, batch=16):
    index = os.path.join(work, "small")
    node = Node(bins["tandem-server"], index, ["--threads", "1"])
    node.start()
    vocab, cum = zipf_vocab(3000)
    for i in range(watchers):
        node.client.subscribe(f"idle-{i}", 'terms contains "zebra"')
    node.client.match([{"id": "warm", "text": "zebra", "attributes": {"year": 2001}}])
    before = node.rss_mb()
    clients = [TandemClient(node.address, timeout=60) for _ in range(watchers)]
    streams = [c.watch(f"idle-{i}") for i, c in enumerate(clients)]
    opened = node.rss_mb()
    text = "zebra " + words(rng, vocab, cum, 10000)  # ~64 KB
    # String attributes are at most 256 bytes each: eight of 250 bytes.
    attributes = {"year": 2001, **{f"note{i}": chr(97 + i) * 250 for i in range(8)}}
    errors, t0 = {}, time.monotonic()
    for b in range(documents // batch):
        docs = [{"id": f"d{b}-{j}", "text": text, "attributes": attributes} for j in range(batch)]
        try:
            node.client.match(docs, timeout=60)
        except TandemError as e:
            if e.code == "INVALID_ARGUMENT":
                raise RuntimeError(f"Match refuses the benchmark's documents: {e}") from None
            errors[e.code] = errors.get(e.code, 0) + 1
        if not node.running():
            break
    publish_s = time.monotonic() - t0
    time.sleep(2)
    alive = node.running()
    after = node.rss_mb() if alive else None
    peak = node.rss_mb("VmHWM") if alive else None
    closed = {}
    for s in streams:
        call = s._call  # the node may end a watcher that falls behind
        if call.done():
            code = call.code().name
            closed[code] = closed.get(code, 0) + 1
    for s, c in zip(streams, clients):
        s.cancel()
        c.close()
    time.sleep(2)
    released = node.rss_mb() if alive else None
    node.stop()
    doc_kb = round((len(text) + 8 * 250) / 1024, 1)
    return {
        "protocol": (f"A CPU-only node with {watchers} subscribers ('terms contains \"zebra\"'), "
                     f"each with one Watch stream (its own channel) that never reads; {documents} "
                     f"matching documents of {doc_kb} KB (text, eight 250-byte attributes) are "
                     f"published in Match calls of {batch}; RSS (VmRSS) before the watchers open, "
                     "with them open, 2 s after the last Match, peak (VmHWM), and 2 s after the "
                     "watchers cancel; streams the node ended meanwhile by code."),
        "watchers": watchers, "documents": documents, "document_kb": doc_kb,
        "published_mb": round(documents * doc_kb / 1024, 1),
        "rss_mb": {"before": before, "watchers_open": opened, "after_publish": after,
                   "peak": peak, "after_cancel": released},
        "rss_growth_mb": round(after - before, 1) if alive else None,
        "match_errors": errors, "publish_s": round(publish_s, 2),
        "watch_streams_ended_by_node": closed, "node_alive": alive,
    }


# -- 4. distinct filters ---------------------------------------------------------------------------

def distinct_filters(bins, work, rng, filters=3000, values=1000, tags=2000):
    node = Node(bins["tandem-server"], os.path.join(work, "small"), ["--threads", "1"])
    node.start()
    same = "tag IN (" + ",".join(f"t{i}" for i in range(values)) + ")"
    for _ in range(50):
        node.client.search(terms=["w5"], k=10, filter=same)
    before = node.rss_mb()
    curve, errors, t0 = [], {}, time.monotonic()
    for q in range(1, filters + 1):
        chosen = sorted(rng.sample(range(tags), values))
        try:
            node.client.search(terms=["w5"], k=10,
                               filter="tag IN (" + ",".join(f"t{i}" for i in chosen) + ")")
        except TandemError as e:
            errors[e.code] = errors.get(e.code, 0) + 1
            if not node.running():
                break
        if q % 500 == 0:
            curve.append({"filters": q, "rss_mb": node.rss_mb()})
    elapsed = time.monotonic() - t0
    after, peak = node.rss_mb(), node.rss_mb("VmHWM")
    alive = node.running()
    node.stop()
    return {
        "protocol": (f"A CPU-only node over the 4,000-document index (keyword attribute tag, "
                     f"{tags} values); one client sends {filters:,} OR top-10 queries, each with "
                     f"a distinct filter 'tag IN (...)' of {values:,} random values (about 6 KB of "
                     "text), one at a time; RSS after 50 queries with one filter, every 500 "
                     "filters, and peak."),
        "filters": filters, "values_per_filter": values,
        "rss_mb": {"before": before, "after": after, "peak": peak}, "curve": curve,
        "rss_growth_mb": round(after - before, 1), "errors": errors,
        "queries_per_s": round(filters / elapsed, 1), "node_alive": alive,
    }


# -- 5. metrics under half-open connections --------------------------------------------------------

def scrape(address, timeout=10.0):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=timeout) as r:
            body = r.read()
            ok = r.status == 200 and b"# TYPE" in body
            return {"answered": ok, "status": r.status, "bytes": len(body),
                    "latency_ms": round((time.monotonic() - t0) * 1000, 2)}
    except Exception as e:  # a timeout, refusal or reset is the figure, not a failure of the run
        return {"answered": False, "error": f"{type(e).__name__}: {e}",
                "latency_ms": round((time.monotonic() - t0) * 1000, 2)}


def metrics_half_open(bins, work, half_open=1000, slow=50, scrapes=3):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    out = {}
    for phase in ("half_open", "slow_clients"):  # each on a fresh node
        node = Node(bins["tandem-server"], os.path.join(work, "small"), ["--threads", "1"])
        node.start()
        host, port = node.metrics_address.rsplit(":", 1)
        baseline = scrape(node.metrics_address)
        if not baseline["answered"]:
            raise RuntimeError(f"/metrics does not answer on a fresh node: {baseline}")
        socks, connect_errors = [], 0
        for _ in range(half_open if phase == "half_open" else slow):
            try:
                s = socket.create_connection((host, int(port)), timeout=5)
                s.sendall(b"GET /metrics HTTP/1.1\r\n")
                socks.append(s)
            except OSError:
                connect_errors += 1
        if phase == "half_open":
            for s in socks:
                s.close()
            out["half_open"] = {"baseline": baseline, "connect_errors": connect_errors,
                                "after": scrape(node.metrics_address)}
        else:
            during = [scrape(node.metrics_address) for _ in range(scrapes)]
            for s in socks:
                s.close()
            lat = sorted(x["latency_ms"] for x in during)
            out["slow_clients"] = {
                "baseline": baseline, "connect_errors": connect_errors, "during": during,
                "answered": sum(x["answered"] for x in during),
                "latency_ms": {"median": lat[len(lat) // 2], "max": lat[-1]},
                "after_close": scrape(node.metrics_address)}
        try:
            node.client.search(terms=["w5"], k=10, timeout=10)
            out[phase]["search_ok_after"] = True
        except TandemError:
            out[phase]["search_ok_after"] = False
        out[phase]["node_alive"] = node.running()
        node.stop()
    out["protocol"] = (
        "A CPU-only node with /metrics on its own port; after a full scrape (urllib, 10 s "
        f"timeout) answers on the fresh node, {half_open:,} connections each send "
        "'GET /metrics HTTP/1.1\\r\\n' (all opened first, then closed) and one scrape is timed; "
        f"on a second fresh node, {scrapes} scrapes in turn are timed while {slow} connections "
        "hold such a partial request open, and one after they close; a Search after each.")
    return out


# -- driver ----------------------------------------------------------------------------------------

def find_binaries(args):
    bins = {}
    for name in BINARIES:
        given = getattr(args, name.replace("-", "_"))
        candidates = [given] if given else [
            os.path.join(args.bin_dir or "", sub, name) for sub in ("", "tools", "bench")]
        found = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
        if not found:
            sys.exit(f"reliability: {name} not found (looked at {', '.join(candidates)})")
        bins[name] = os.path.abspath(found)
    if shutil.which("taskset") is None:
        sys.exit("reliability: taskset not found (util-linux)")
    return bins


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"host": platform.node(), "cores": os.cpu_count(), "cpu": cpu,
            "loadavg_at_start": os.getloadavg()[0]}


def table(r):
    t, o = r["tampered_lists"], r["overload"]
    w, f, m = r["idle_watchers"], r["distinct_filters"], r["metrics_half_open"]
    oc = t["outcomes"]
    lines = [
        f"{'measurement':44} figure",
        f"{'tampered lists: trials':44} {t['trials']}",
        *(f"{'  ' + k:44} {v}" for k, v in oc.items()),
    ]
    for name, x in o["transports"].items():
        lines += [f"{'overload ' + name + ': capacity q/s':44} {x['capacity_qps']:,.0f}",
                  f"{'  refused share at 0.7x':44} {x['refused_share_at_0_7x']:.2%}",
                  f"{'  served share of capacity at 3x':44} "
                  f"{x['served_share_of_capacity_at_3x']:.2%}"]
    lines += [
        f"{'idle watchers: RSS before -> after MB':44} {w['rss_mb']['before']} -> "
        f"{w['rss_mb']['after_publish']} (peak {w['rss_mb']['peak']}), "
        f"ended by node {w['watch_streams_ended_by_node'] or 0}",
        f"{'distinct filters: RSS before -> after MB':44} {f['rss_mb']['before']} -> "
        f"{f['rss_mb']['after']} ({f['filters']:,} filters)",
        f"{'metrics after half-open: answered, ms':44} {m['half_open']['after']['answered']}, "
        f"{m['half_open']['after']['latency_ms']}",
        f"{'metrics with slow clients: answered, ms':44} {m['slow_clients']['answered']}/"
        f"{len(m['slow_clients']['during'])}, median {m['slow_clients']['latency_ms']['median']}"
        f" max {m['slow_clients']['latency_ms']['max']}",
    ]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("bin_dir", nargs="?", help="build directory or directory of the binaries")
    for name in BINARIES:
        ap.add_argument("--" + name, help=f"path to {name} (default: under BIN_DIR)")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--trials", type=int, default=200, help="tampered-list trials")
    ap.add_argument("--overload-seconds", type=int, default=10, help="seconds per open-loop row")
    ap.add_argument("--workdir", help="keep indexes and copies here (default: a temporary dir)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    bins = find_binaries(args)
    if os.cpu_count() < 2:
        sys.exit("reliability: needs 2 CPUs (node on CPU 0, load generator on CPU 1)")
    rng = random.Random(args.seed)
    work = args.workdir or tempfile.mkdtemp(prefix="tandem-reliability-")
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    result = {"benchmark": "reliability", "machine": machine(), "gpu": None, "commit": commit,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "binaries": bins}
    steps = [("tampered_lists", lambda: tampered_lists(bins, work, args.trials, rng)),
             ("overload", lambda: overload(bins, work, args.overload_seconds, rng)),
             ("idle_watchers", lambda: idle_watchers(bins, work, rng)),
             ("distinct_filters", lambda: distinct_filters(bins, work, rng)),
             ("metrics_half_open", lambda: metrics_half_open(bins, work))]
    try:
        for name, step in steps:
            t0 = time.monotonic()
            print(f"reliability: {name} ...", file=sys.stderr, flush=True)
            result[name] = step()
            result[name]["wall_s"] = round(time.monotonic() - t0, 1)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    result["wall_s"] = round(time.monotonic() - started, 1)
    # The machine may be shared: a load average near its cores marks rates as noisy.
    result["machine"]["loadavg_at_end"] = os.getloadavg()[0]
    result["protocol"] = " ".join(
        f"({i}) {result[name]['protocol']}" for i, (name, _) in enumerate(steps, 1))
    lines = table(result)
    print("\n".join(lines))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out} ({result['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
