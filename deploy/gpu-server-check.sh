#!/usr/bin/env bash
# End-to-end check of tandem-server with the GPU engine on the GPU machine.
# Pack first: deploy/gpu-bundle.sh build/tools/tandem-server build/tools/tandem-cli \
#   build/tools/tandem-index -- STATS.tsv.gz DOCLENGTHS.tsv trec05-efficiency.txt;
#   mkdir -p .gpu-carry/e2e; tar -cJf .gpu-carry/e2e/e2e.tar.xz .gpu-bundle
# then run `bash deploy/gpu-server-check.sh` on the GPU machine with .gpu-carry/e2e beside it.
# STORED=1 first writes the GPU layouts beside the index (tandem-index gpu-layouts); SERVER_FLAGS
# are passed to tandem-server (e.g. --tune-gpu-batch-compressed).
set -u
tar -xJf .gpu-carry/e2e/e2e.tar.xz
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib
B=.gpu-bundle/bin; D=.gpu-bundle/data
$B/tandem-index synth --docs 2000000 --termstats $D/wikipedia-termstats.tsv.gz --doclengths $D/wikipedia-doclengths.tsv \
  --queries $D/trec05-efficiency.txt --vocabulary query-terms --postings-per-doc 240 --seed 1 --threads 16 --output /tmp/idx | tail -3
[[ -n ${STORED:-} ]] && $B/tandem-index gpu-layouts /tmp/idx | tail -1
$B/tandem-server --index /tmp/idx --listen 127.0.0.1:50051 --metrics-listen 127.0.0.1:9464 --gpu required \
  ${SERVER_FLAGS:-} > $OUT/server.log 2>&1 &
SP=$!
for i in $(seq 300); do $B/tandem-cli health >/dev/null 2>&1 && break; sleep 0.2; done
cat $OUT/server.log
$B/tandem-cli info | tee $OUT/info.txt
head -300 $D/trec05-efficiency.txt > /tmp/q.txt
for m in and or and_or; do for e in cpu gpu; do
  $B/tandem-cli batch --mode $m --k 100 --engine $e --json /tmp/q.txt > /tmp/$m.$e.json 2>/tmp/$m.$e.err; echo "$m $e rc=$?"
done; done
python3 - <<'PY' | tee $OUT/compare.txt
import json
for m in ["and", "or", "and_or"]:
    a = [json.loads(l) for l in open(f"/tmp/{m}.cpu.json") if l.strip()]
    b = [json.loads(l) for l in open(f"/tmp/{m}.gpu.json") if l.strip()]
    same = diff = hits = 0
    engines = set()
    for x, y in zip(a, b):
        rx, ry = x.get("response", {}), y.get("response", {})
        hx, hy = rx.get("hits", []), ry.get("hits", [])
        engines.add(ry.get("stats", {}).get("engine"))
        ok = len(hx) == len(hy) and all(p.get("docid", 0) == q.get("docid", 0) and abs(p["score"] - q["score"]) <= 1e-5 * max(1.0, abs(p["score"])) for p, q in zip(hx, hy))
        same += ok; diff += not ok; hits += len(hx)
    errs = sum("status" in x for x in a) + sum("status" in y for y in b)
    print(f"{m}: {len(a)} queries, {errs} errors, {hits} hits, identical {same}, different {diff}, gpu-side engines {sorted(e for e in engines if e)}")
PY
python3 -c "import urllib.request;t=urllib.request.urlopen('http://127.0.0.1:9464/metrics').read().decode();print('\n'.join(l for l in t.splitlines() if l.startswith(('tandem_queries_total','tandem_gpu_fallbacks','tandem_build_info','tandem_gpu_batch'))))" | tee $OUT/metrics.txt
kill -TERM $SP; wait $SP; echo "server exit $?"
