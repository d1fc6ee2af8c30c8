#!/usr/bin/python3
"""Writes expected.tsv: the known top-k answers of queries.tsv over corpus.jsonl.

The answers are computed here, in Python, from the text itself: BM25 as index/bm25.h documents it,
with every intermediate rounded to float32 as the C++ code rounds it. Nothing of Tandem's query
engines is used. The corpus is written so that its analysis is trivial (lower-case ASCII words,
simple punctuation, Lucene's stop words, words that are their own Porter stem); to make sure
Tandem's analyzer agrees, the corpus is built with the real tandem-index binary and every term's
postings (docID, tf) and the index's totals are compared with the ones computed here, as is the
absence of the stop words and of the query words the corpus lacks. Any difference stops the script
and names the word.

    /usr/bin/python3 tests/data/tiny/make_expected.py \
        --tandem-index build/tools/tandem-index
"""

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split())

MODES = ("and", "or", "and_or")
KS = (3, 10)  # tests/tiny_corpus_test.cc reads MODES and KS as kModes and kKs


def f32(x):
    """Rounds a Python float (a double) to the nearest float32, as a C++ cast to float does.

    One +, -, * or / of two float32 values done in double and then rounded is the float32 result:
    53 bits are more than the 2 * 24 + 2 that make the double rounding harmless.
    """
    return struct.unpack("f", struct.pack("f", x))[0]


# BM25 parameters as float32 (index/bm25.h, Bm25Params).
K1 = f32(0.9)
B = f32(0.4)

# Only these characters; punctuation must be followed by a space or end the text, so that Unicode
# word breaking cannot join two words across it.
ALLOWED = re.compile(r"^[a-z ,.:;!?\n]*$")
GLUED = re.compile(r"[,.:;!?][a-z]")
WORD = re.compile(r"[a-z]+")


def fail(message):
    sys.exit("make_expected.py: " + message)


def read_corpus(path):
    """[(external id, [terms])] in input order: docID i is the i-th line."""
    docs = []
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, 1):
            if not line.strip():
                continue
            obj = json.loads(line)
            # The BEIR reader indexes the title, a line break, then the text.
            text = obj.get("title", "") + "\n" + obj["text"]
            if not ALLOWED.match(text) or GLUED.search(text):
                fail(f"{path}:{line_number}: text outside the simple alphabet: {text!r}")
            terms = [w for w in WORD.findall(text) if w not in STOP_WORDS]
            docs.append((obj["_id"], terms))
    return docs


def read_queries(path):
    queries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            qid, text = line.split("\t", 1)
            if not ALLOWED.match(text) or GLUED.search(text):
                fail(f"query {qid}: text outside the simple alphabet: {text!r}")
            queries.append((qid, text))
    return queries


def invert(docs):
    """term -> [(docID, tf)] in docID order."""
    postings = {}
    for docid, (_, terms) in enumerate(docs):
        counts = {}
        for t in terms:
            counts[t] = counts.get(t, 0) + 1
        for t, tf in counts.items():
            postings.setdefault(t, []).append((docid, tf))
    return postings


def run(binary, args):
    return subprocess.run([binary] + args, capture_output=True, text=True)


def check_against_tandem(binary, corpus_path, docs, postings, queries):
    """Builds the corpus with tandem-index and compares its analysis with ours, term by term."""
    with tempfile.TemporaryDirectory() as tmp:
        index_dir = os.path.join(tmp, "index")
        built = run(binary, ["build", "--input", corpus_path, "--format", "beir", "--output",
                             index_dir, "--strict", "--quiet", "--threads", "1"])
        if built.returncode != 0:
            fail(f"tandem-index build failed:\n{built.stderr}")
        inspect = run(binary, ["inspect", index_dir])
        if inspect.returncode != 0:
            fail(f"tandem-index inspect failed:\n{inspect.stderr}")
        stats = dict(re.findall(r"^(documents|terms|postings)\s+(\d+)", inspect.stdout, re.M))
        ours = {"documents": len(docs), "terms": len(postings),
                "postings": sum(len(p) for p in postings.values())}
        mismatches = [f"tandem-index counts {stats.get(key)} {key}, this script {value}"
                      for key, value in ours.items() if int(stats.get(key, -1)) != value]
        for term in sorted(postings):
            # --postings covers the first block, which holds the whole list in a corpus this small.
            looked = run(binary, ["lookup", "--postings", "100000", index_dir, term])
            lines = looked.stdout.splitlines()
            if looked.returncode != 0 or not lines or lines[0].split() != ["term", term]:
                first = lines[0] if lines else looked.stderr.strip()
                mismatches.append(f"'{term}': tandem-index analyzes it differently ({first})")
                continue
            df = re.search(r"^df\s+(\d+)$", looked.stdout, re.M)
            got = [tuple(map(int, m)) for m in re.findall(r"^  (\d+):(\d+) ", looked.stdout, re.M)]
            if not df or int(df.group(1)) != len(postings[term]):
                mismatches.append(f"'{term}': tandem-index df {df and df.group(1)}, this script "
                                  f"{len(postings[term])}")
            elif got != postings[term]:
                mismatches.append(f"'{term}': tandem-index postings {got}, this script "
                                  f"{postings[term]}")
        for word in sorted(STOP_WORDS):
            looked = run(binary, ["lookup", index_dir, word])
            if looked.returncode != 2:
                mismatches.append(f"stop word '{word}' is an index term")
        for qid, text in queries:
            for word in WORD.findall(text):
                if word in STOP_WORDS or word in postings:
                    continue
                # Absent here: neither the word nor its analyzed form may be an index term.
                looked = run(binary, ["lookup", index_dir, word])
                if looked.returncode != 2:
                    mismatches.append(f"query {qid}: '{word}' matches an index term")
        if mismatches:
            fail("the analysis differs from Tandem's:\n  " + "\n  ".join(mismatches))


def search(docs, postings, text, mode, k):
    """[(docID, score)] in rank order, as index/query.h and index/bm25.h define them."""
    n = len(docs)
    lengths = [len(terms) for _, terms in docs]
    total = sum(lengths)
    avg = 1.0 if n == 0 or total == 0 else f32(total / n)

    def norm(length):  # k1 * ((1 - b) + ((b * |d|) / avgdl)), as Bm25DocNorm groups it
        return f32(K1 * f32(f32(1.0 - B) + f32(f32(B * float(length)) / avg)))

    # Repeated terms merge into one with the summed weight, in first-occurrence order.
    weights = {}
    for t in WORD.findall(text):
        if t not in STOP_WORDS:
            weights[t] = f32(weights.get(t, 0.0) + 1.0)
    present = [t for t in weights if t in postings]
    if not present:
        return []
    weighted_idf = {}
    tf = {}
    for t in present:
        df = len(postings[t])
        idf = f32(math.log(1.0 + (n - df + 0.5) / (df + 0.5)))
        weighted_idf[t] = f32(weights[t] * idf)
        tf[t] = dict(postings[t])

    def ranked(conjunctive):
        candidates = set()
        for t in present:
            candidates.update(tf[t])
        hits = []
        for d in candidates:
            if conjunctive and any(d not in tf[t] for t in present):
                continue
            score = 0.0
            for t in present:  # summed in query-term order
                if d in tf[t]:
                    f = float(tf[t][d])
                    score = f32(score + f32(weighted_idf[t] * f32(f / f32(f + norm(lengths[d])))))
            hits.append((d, score))
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]

    absent = len(present) < len(weights)
    hits = []
    if mode in ("and", "and_or") and not absent:
        hits = ranked(True)
    if mode == "or" or (mode == "and_or" and len(hits) < k):
        hits = ranked(False)
    return hits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tandem-index", required=True, help="path of the tandem-index binary")
    parser.add_argument("--output", default=os.path.join(HERE, "expected.tsv"))
    args = parser.parse_args()

    corpus_path = os.path.join(HERE, "corpus.jsonl")
    docs = read_corpus(corpus_path)
    postings = invert(docs)
    queries = read_queries(os.path.join(HERE, "queries.tsv"))
    check_against_tandem(args.tandem_index, corpus_path, docs, postings, queries)

    rows = 0
    with open(args.output, "w", encoding="utf-8") as out:
        out.write("# Written by make_expected.py from corpus.jsonl and queries.tsv; do not edit.\n")
        out.write(f"# modes {' '.join(MODES)}; k {' '.join(map(str, KS))}; a query, mode and k "
                  "with no line has no hits.\n")
        out.write("# query_id\tmode\tk\trank\texternal_id\tscore\n")
        for qid, text in queries:
            for mode in MODES:
                for k in KS:
                    for rank, (d, score) in enumerate(search(docs, postings, text, mode, k), 1):
                        out.write(f"{qid}\t{mode}\t{k}\t{rank}\t{docs[d][0]}\t{score:.9g}\n")
                        rows += 1
    print(f"{len(docs)} documents, {len(postings)} terms, {len(queries)} queries, "
          f"{rows} answer lines in {os.path.relpath(args.output)}")


if __name__ == "__main__":
    main()
