#!/usr/bin/env bash
# Index size, Tandem beside PISA (github.com/pisa-engine/pisa) on the same postings: for each
# collection, the Tandem index (codec simdbp) and its four files; the same postings exported as
# PISA's binary collection (tandem-index export --format pisa) and compressed by PISA's
# compress_inverted_index (block_simdbp); and the files in which PISA keeps what Tandem's four files
# hold: WAND data (block maxima of 128 postings and document lengths, BM25 k1 0.9 b 0.4; float, and
# quantized to 8 bits and compressed) and the term and document lexicons. Sizes are the files on
# disk, frames included; bits/posting = 8 * bytes / postings.
#
#   bench/index_size.sh --pisa ../shared/tools/pisa/pisa-69f2a83-x86-64-v3.tgz --record dev \
#     [--out FILE.json] [--bin build] [--data ../shared/data] [--work /tmp/index-size] \
#     [--collections "wikipedia reuters synth"] [--synth-docs 2000000]
#
# --pisa: PISA's prebuilt bundle (the .tgz or its unpacked device-bundle/) or a PISA build
#   directory with compress_inverted_index, create_wand_data and lexicon in it or its bin/. PISA is
#   not a dependency of Tandem: nothing is downloaded, and the script stops when it is missing.
# --bin: the directory with tandem-index (a build directory or a bundle's bin/).
# --data: ../shared/data: text/wikipedia, text/reuters21578, stats/ and queries/.
# Collections: wikipedia (WikiExtractor text, 6,514 articles), reuters (Reuters-21578), synth (the
#   GOV2-like model of bench/WORKLOADS.md, --synth-docs documents; 25000000 is the full workload).
# Prints a table and writes JSON (--out, default WORK/index_size.json) with the date, the commit of
# the binaries, PISA's commit and every file's size; --record KIND stores it in
# bench/results/index_size.json under runs.KIND (bench/results_store.py). SUMMARY_ONLY=1
# summarizes --work again without building anything.
set -euo pipefail
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
PISA="" OUT="" RECORD="" BIN="$HERE/build" DATA="$HERE/../shared/data" WORK=/tmp/index-size
COLLECTIONS="wikipedia reuters synth" SYNTH_DOCS=2000000
while (($#)); do
  case "$1" in
    --pisa) PISA=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --record) RECORD=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --collections) COLLECTIONS=$2; shift 2 ;;
    --synth-docs) SYNTH_DOCS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "index_size.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
die() { echo "index_size.sh: $*" >&2; exit 1; }
[[ -n "$OUT" || -n "$RECORD" ]] || die "--record KIND (or --out FILE.json) is required"
OUT=${OUT:-$WORK/index_size.json}
[[ "$SYNTH_DOCS" =~ ^[1-9][0-9]*$ ]] || die "--synth-docs wants a positive number, not '$SYNTH_DOCS'"
mkdir -p "$WORK"
source "$HERE/bench/pisa_tools.sh"
find_pisa "$PISA" "$WORK" compress_inverted_index create_wand_data lexicon
if [[ -x "$BIN/tandem-index" ]]; then TINDEX=$BIN/tandem-index; else
  TINDEX=$(find "$BIN" -name tandem-index -type f -perm -u+x 2>/dev/null | head -1)
fi
[[ -n "${TINDEX:-}" ]] || die "no tandem-index under '$BIN' (--bin)"
datafile() { [[ -e "$DATA/$1" ]] || die "no $1 under '$DATA' (--data)"; echo "$DATA/$1"; }

for c in $COLLECTIONS; do
  [[ -n "${SUMMARY_ONLY:-}" ]] && break
  W=$WORK/$c
  rm -rf "$W" && mkdir -p "$W"
  case "$c" in
    wikipedia) args=(build --input "$(datafile text/wikipedia)" --format wikiextractor) ;;
    reuters) args=(build --input "$(datafile text/reuters21578)" --format reuters) ;;
    synth)
      args=(synth --docs "$SYNTH_DOCS" --termstats "$(datafile stats/wikipedia-termstats.tsv.gz)"
        --doclengths "$(datafile stats/wikipedia-doclengths.tsv)"
        --queries "$(datafile queries/trec05-efficiency.txt)" --vocabulary query-terms
        --postings-per-doc 240 --seed 1) ;;
    *) die "unknown collection '$c' (wikipedia, reuters, synth)" ;;
  esac
  "$TINDEX" "${args[@]}" --codec simdbp --output "$W/idx" --quiet >/dev/null
  echo "$TINDEX ${args[*]} --codec simdbp" | sed "s|$DATA|DATA|g; s|$TINDEX|tandem-index|" >"$W/command.txt"
  "$TINDEX" export --format pisa "$W/idx" "$W/c" >/dev/null
  "$PBIN/compress_inverted_index" -c "$W/c" -o "$W/c.block_simdbp" -e block_simdbp >/dev/null 2>&1
  "$PBIN/create_wand_data" -c "$W/c" -o "$W/c.wand" -s bm25 --bm25-k1 0.9 --bm25-b 0.4 \
    --block-size 128 >/dev/null 2>&1
  "$PBIN/create_wand_data" -c "$W/c" -o "$W/c.wand.q8" -s bm25 --bm25-k1 0.9 --bm25-b 0.4 \
    --block-size 128 --quantize 8 --compress >/dev/null 2>&1
  "$PBIN/lexicon" build "$W/c.terms" "$W/c.termlex" >/dev/null 2>&1
  "$PBIN/lexicon" build "$W/c.documents" "$W/c.doclex" >/dev/null 2>&1
  rm -f "$W/c.docs" "$W/c.freqs"
done
python3 - "$WORK" "$OUT" "$PISA_COMMIT" "$TINDEX" $COLLECTIONS <<'EOF'
import datetime, json, os, re, subprocess, sys
work, out, pisa_commit, tindex, collections = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
names = {"wikipedia": "Wikipedia (6,514 articles)", "reuters": "Reuters-21578",
         "synth": "synthetic GOV2-like"}
version = subprocess.run([tindex, "--version"], capture_output=True, text=True).stdout.strip()
result = {"benchmark": "index_size",
          "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
          "tandem": version, "pisa_commit": pisa_commit,
          "commit": re.search(r"commit ([0-9a-f]+)|$", version).group(1) or "unknown",
          "machine": f"{os.uname().nodename} (sizes do not depend on the machine)",
          "how": "tandem-index with --codec simdbp; PISA on the same postings (tandem-index export "
                 "--format pisa): compress_inverted_index -e block_simdbp, create_wand_data -s bm25 "
                 "--bm25-k1 0.9 --bm25-b 0.4 --block-size 128 (float, and --quantize 8 --compress), "
                 "lexicon build of the terms and documents; sizes of the files on disk",
          "collections": {}}
size = lambda p: os.path.getsize(p)
rows = []
for c in collections:
    w = f"{work}/{c}"
    files = {f: size(f"{w}/idx/{f}") for f in sorted(os.listdir(f"{w}/idx")) if f.endswith(".bin")}
    # The manifest's payload (index/FORMAT.md): JSON between the 32-byte header and 16-byte footer.
    manifest = json.loads(open(f"{w}/idx/manifest.bin", "rb").read()[32:-16])
    postings = manifest["stats"]["num_postings"]
    pisa = {"index_block_simdbp": size(f"{w}/c.block_simdbp"), "wand_float": size(f"{w}/c.wand"),
            "wand_q8_compressed": size(f"{w}/c.wand.q8"), "termlex": size(f"{w}/c.termlex"),
            "doclex": size(f"{w}/c.doclex")}
    bits = lambda b: 8.0 * b / postings
    total = sum(files.values())
    pisa_all = pisa["index_block_simdbp"] + pisa["wand_float"] + pisa["termlex"] + pisa["doclex"]
    pisa_q8 = pisa["index_block_simdbp"] + pisa["wand_q8_compressed"] + pisa["termlex"] + pisa["doclex"]
    entry = {"name": names[c] if c != "synth" else f"{names[c]}, {manifest['stats']['num_docs']:,} documents",
             "command": open(f"{w}/command.txt").read().strip(),
             "postings": postings, "tandem_files": files, "pisa_files": pisa,
             "tandem_bits_per_posting": bits(total),
             "tandem_postings_bits_per_posting": bits(files["postings.bin"]),
             "pisa_index_bits_per_posting": bits(pisa["index_block_simdbp"]),
             "pisa_with_wand_and_lexicons_bits_per_posting": bits(pisa_all),
             "tandem_postings_over_pisa_index": files["postings.bin"] / pisa["index_block_simdbp"],
             "tandem_over_pisa_index": total / pisa["index_block_simdbp"],
             "tandem_over_pisa_with_wand_and_lexicons": total / pisa_all,
             "tandem_over_pisa_with_q8_wand_and_lexicons": total / pisa_q8}
    result["collections"][c] = entry
    rows.append(entry)
lines = [f"# Index size, Tandem ({result['tandem']}) beside PISA {pisa_commit[:7]} block_simdbp on the "
         f"same postings, {result['date']}",
         "# bits per posting; Tandem: its four files and postings.bin alone (which holds the block "
         "maxima); PISA: its index, and with its WAND data (float block maxima, document lengths) "
         "and term and document lexicons.",
         f"{'collection':42} {'postings':>13} {'T total':>8} {'T post':>8} {'PISA idx':>8} "
         f"{'PISA all':>8} {'Tpost/Pidx':>10} {'Ttot/Pall':>10}"]
for e in rows:
    lines.append(f"{e['name']:42} {e['postings']:13,} {e['tandem_bits_per_posting']:8.2f} "
                 f"{e['tandem_postings_bits_per_posting']:8.2f} {e['pisa_index_bits_per_posting']:8.2f} "
                 f"{e['pisa_with_wand_and_lexicons_bits_per_posting']:8.2f} "
                 f"{e['tandem_postings_over_pisa_index']:10.3f} "
                 f"{e['tandem_over_pisa_with_wand_and_lexicons']:10.3f}")
print("\n".join(lines))
with open(out, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
EOF
if [[ -n "$RECORD" ]]; then
  python3 "$HERE/bench/results_store.py" merge --benchmark index_size --machine "$RECORD" --gpu none \
    --produced-by '`bench/index_size.sh`' \
    --machine-desc "$(uname -n) (sizes do not depend on the machine)" \
    --protocol "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["how"])' "$OUT")" "$OUT"
fi
