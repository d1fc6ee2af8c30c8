#!/usr/bin/env bash
# Ranking quality on every judged collection in ../shared/data (or $TANDEM_DATA_DIR): builds each
# index with tandem-index, runs tandem-eval (OR, k = 1000, BM25 k1 = 0.9, b = 0.4), prints a table
# and records the run in bench/results/quality.json under runs.$RESULTS_MACHINE (default dev; via
# bench/results_store.py, which regenerates bench/results/README.md).
# Usage: [RESULTS_MACHINE=KIND] bench/run_quality.sh [BUILD_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
DATA="${TANDEM_DATA_DIR:-$ROOT/../shared/data}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
INDEX="$BUILD/tools/tandem-index"
EVAL="$BUILD/bench/tandem-eval"
MACHINE="${RESULTS_MACHINE:-dev}"

# name | format | corpus | topics | qrels | extra tandem-eval flags | published BM25 nDCG@10
COLLECTIONS=(
  "scifact|beir|beir-scifact/corpus.jsonl|beir-scifact/queries.test.tsv|beir-scifact/qrels.test.trec||0.6789"
  "cranfield|smart|classic/cranfield/cran.all.1400|classic/cranfield/cran.qry|classic/cranfield/cranqrel|--ordinal_ids|"
  "cisi|smart|classic/cisi/CISI.ALL|classic/cisi/CISI.QRY|classic/cisi/CISI.REL||"
  "med|smart|classic/med/MED.ALL|classic/med/MED.QRY|classic/med/MED.REL||"
  "npl|npl|classic/npl/doc-text|classic/npl/query-text|classic/npl/rlv-ass||"
)
commit="$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
printf '%s\n' "| collection | docs | topics judged | nDCG@10 | MAP@1000 | R@100 | published BM25 nDCG@10 |" \
  "|---|---|---|---|---|---|---|" > "$WORK/quality.md"
: > "$WORK/collections.jsonl"
for spec in "${COLLECTIONS[@]}"; do
  IFS='|' read -r name format corpus topics qrels extra published <<<"$spec"
  if [[ ! -e "$DATA/$corpus" ]]; then
    echo "run_quality: $DATA/$corpus not found, skipping $name" >&2
    continue
  fi
  "$INDEX" build --quiet --input "$DATA/$corpus" --format "$format" --output "$WORK/$name" >/dev/null
  # shellcheck disable=SC2086
  "$EVAL" --index "$WORK/$name" --queries "$DATA/$topics" --qrels "$DATA/$qrels" --mode or --k 1000 \
    --json "$WORK/$name.json" $extra >/dev/null
  /usr/bin/python3 - "$WORK/$name.json" "$name" "$published" "$WORK/quality.md" "$INDEX" "$WORK/$name" \
    "$WORK/collections.jsonl" <<'PY'
import json, subprocess, sys
path, name, published, md, index_bin, index_dir, jsonl = sys.argv[1:]
r = json.load(open(path))
info = subprocess.run([index_bin, "inspect", index_dir], capture_output=True, text=True).stdout
docs = next((l.split()[1] for l in info.splitlines() if l.startswith("documents")), "?")
r.update({"collection": name, "documents": int(docs) if docs.isdigit() else docs,
          "published_bm25_ndcg_cut_10": float(published) if published else None})
for scratch in ("index", "queries", "qrels"):  # paths of this run's scratch directory and data
    r.pop(scratch, None)
with open(jsonl, "a") as f:
    f.write(json.dumps(r) + "\n")
with open(md, "a") as f:
    f.write(f"| {name} | {docs} | {r['judged_topics']} | {r['ndcg_cut_10']:.4f} | {r['map']:.4f} | "
            f"{r['recall_100']:.4f} | {published or 'none authoritative'} |\n")
PY
done
cat "$WORK/quality.md"
/usr/bin/python3 - "$WORK/collections.jsonl" "$commit" > "$WORK/quality.json" <<'PY'
import datetime, json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(json.dumps({"collections": rows, "commit": sys.argv[2],
                  "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}))
PY
/usr/bin/python3 "$ROOT/bench/results_store.py" merge --benchmark quality --machine "$MACHINE" \
  --gpu none --produced-by '`bench/run_quality.sh`' --protocol "SciFact (BEIR test topics), Cranfield, CISI, MED, NPL; tandem-eval --mode or --k 1000" \
  "$WORK/quality.json"
