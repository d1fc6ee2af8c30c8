// tandem-index: builds, inspects and queries the metadata of Tandem index directories.
//
//   tandem-index build --input PATH --format FORMAT --output DIR [--codec CODEC] [--threads N]
//                      [--attributes FIELD,...|all [--bitmap-codec plwah|wah] [--gpu
//                      auto|off|required]]
//   tandem-index synth --docs N --termstats FILE --doclengths FILE [--queries FILE,...]
//                      --vocabulary query-terms|all [--postings-per-doc P] --seed S --output DIR
//   tandem-index inspect DIR
//   tandem-index lookup DIR TERM
//   tandem-index gpu-layouts DIR [--threads N]
//   tandem-index import --format ciff FILE --output DIR [--codec CODEC]
//   tandem-index export --format ciff|pisa DIR OUT
//   tandem-index shard --shards S DIR OUT [--threads N]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gpu/layouts/stored_layouts.h"
#if TANDEM_HAVE_GPU
#include "gpu/bitmaps/bitmap_build.h"
#endif
#include "base/app.h"
#include "filter/bitmap.h"
#include "index/block_codec.h"
#include "index/bm25.h"
#include "index/index.h"
#include "index_builder/ciff_import.h"
#include "index_builder/document_reader.h"
#include "index_builder/index_export.h"
#include "index_builder/inverter.h"
#include "index_builder/shard.h"
#include "index_builder/synth.h"
#include "tools/tandem_index_expert.h"
#include "tools/tandem_index_live.h"

ABSL_FLAG(std::string, input, "", "build: input file or directory");
ABSL_FLAG(std::string, format, "",
          "build: input format (auto, beir, trec, smart, npl, reuters, wikiextractor, email, "
          "lines); auto tells it from the first files and says which it picked. import: ciff. "
          "export: ciff (one file) or pisa (OUT.docs, .freqs, .sizes, .terms, .documents)");
ABSL_FLAG(std::string, output, "",
          "build, synth, import: index directory to create (replaced atomically if it holds an "
          "index)");
ABSL_FLAG(std::string, codec, "pfor",
          absl::StrCat("build, synth, import: block codec (",
                       absl::StrJoin(tandem::index::BlockCodecNames(), ", "), ")"));
ABSL_FLAG(int, threads, 0, "build, synth, gpu-layouts, shard: worker threads (0: all cores)");
ABSL_FLAG(int, shards, 0, "shard: number of shards, 1 to the number of documents");
ABSL_FLAG(bool, strict, false,
          "build: stop at the first malformed document instead of skipping it");
ABSL_FLAG(bool, store_text, false,
          "build: keep each document's indexed text in the index (stored field \"text\"), so that "
          "searches can ask for snippets; the document table grows by about the input's text");
ABSL_FLAG(std::string, attributes, "",
          "build: document attributes to store as bitmap indexes for filters, comma-separated "
          "(\"all\": every field of the format, and length); a field may say :keyword or "
          ":integer. e-mail: domain, year, month, label, attachment; reuters: topics, places, "
          "lewissplit; trec, wikiextractor: short metadata tags; beir: JSON members; any format: "
          "length (terms)");
ABSL_FLAG(std::string, gpu, "auto",
          "build, synth: build the attribute bitmaps on the GPU: auto (when one is present), off, "
          "required (fail without one)");
ABSL_FLAG(double, max_bad_fraction, 0.01,
          "build: fail, leaving any index at --output as it was, when more than this share of "
          "the documents read are malformed (1 keeps every good document whatever the share)");
ABSL_FLAG(std::string, duplicate_ids, "fail",
          "build: documents that repeat an earlier document's external id: fail (count them "
          "all, write nothing), keep-first (skip the later ones) or keep-last (each later one "
          "replaces the earlier); the build says how many were dropped");
ABSL_FLAG(bool, quiet, false, "build, synth, import: no progress line, no per-document warnings");
ABSL_FLAG(int, postings, 10, "lookup: postings to print");

namespace tandem::index_builder {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "tandem-index: %s\n", std::string(s.message()).c_str());
  return 1;
}

// The bitmap builder of --gpu: the GPU's (Fusco et al. 2013) when one is present and allowed,
// else null (the CPU builder). Under auto, a field whose GPU build fails is built on the CPU.
absl::StatusOr<BitmapBuilder> MakeBitmapBuilder(const std::string& mode, bool quiet) {
  if (mode != "auto" && mode != "off" && mode != "required") {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu must be auto, off or required, got \"", mode, "\""));
  }
  if (mode == "off") return BitmapBuilder();
#if TANDEM_HAVE_GPU
  absl::StatusOr<std::unique_ptr<gpu::GpuBitmapBuilder>> gpu = gpu::GpuBitmapBuilder::Create();
  if (gpu.ok()) {
    std::shared_ptr<gpu::GpuBitmapBuilder> shared = *std::move(gpu);
    const bool required = mode == "required";
    return BitmapBuilder([shared, required, quiet](filter::BitmapCodec codec, uint32_t num_rows,
                                                   std::span<const uint32_t> values,
                                                   std::span<const uint32_t> rows)
                             -> absl::StatusOr<filter::BitmapColumns> {
      absl::StatusOr<filter::BitmapColumns> built = shared->Build(codec, num_rows, values, rows);
      if (built.ok() || required || absl::IsInvalidArgument(built.status())) return built;
      if (!quiet) {
        std::fprintf(stderr, "tandem-index: GPU bitmap build failed (%s); building on the CPU\n",
                     std::string(built.status().message()).c_str());
      }
      return filter::BuildBitmaps(codec, num_rows, values, rows);
    });
  }
  if (mode == "required") {
    return absl::FailedPreconditionError(
        absl::StrCat("--gpu required: no usable GPU: ", std::string(gpu.status().message())));
  }
  return BitmapBuilder();
#else
  if (mode == "required") {
    return absl::FailedPreconditionError(
        "--gpu required: this tandem-index was built without CUDA");
  }
  return BitmapBuilder();
#endif
}

// The codec (--bitmap-codec) and the builder (--gpu) of the attribute bitmaps of a build or a
// synthetic index, whose options name both alike.
template <typename Options>
absl::Status SetBitmapOptions(bool quiet, Options& options) {
  absl::StatusOr<filter::BitmapCodec> codec =
      filter::ParseBitmapCodec(absl::GetFlag(FLAGS_bitmap_codec));
  if (!codec.ok()) return codec.status();
  options.bitmap_codec = *codec;
  absl::StatusOr<BitmapBuilder> builder = MakeBitmapBuilder(absl::GetFlag(FLAGS_gpu), quiet);
  if (!builder.ok()) return builder.status();
  options.bitmap_builder = *std::move(builder);
  return absl::OkStatus();
}

int Build() {
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string format = absl::GetFlag(FLAGS_format);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (input.empty() || format.empty() || output.empty()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("build needs --input PATH --format FORMAT --output DIR (formats: ",
                     absl::StrJoin(DocumentFormatNames(), ", "), ")")));
  }
  const double max_bad_fraction = absl::GetFlag(FLAGS_max_bad_fraction);
  if (!(max_bad_fraction >= 0 && max_bad_fraction <= 1)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--max-bad-fraction must be between 0 and 1, got ", max_bad_fraction)));
  }
  const std::string duplicate_ids_flag = absl::GetFlag(FLAGS_duplicate_ids);
  const std::optional<DuplicateIds> duplicate_ids = ParseDuplicateIds(duplicate_ids_flag);
  if (!duplicate_ids) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--duplicate-ids must be fail, keep-first or keep-last, got \"",
                     duplicate_ids_flag, "\"")));
  }
  std::string format_used = format;
  if (format == "auto") {
    absl::StatusOr<DetectedFormat> detected = DetectDocumentFormat(input);
    if (!detected.ok()) return Fail(detected.status());
    format_used = detected->format;
    std::fprintf(stderr,
                 "tandem-index: --format auto: reading %s as %s (%zu of the %zu files "
                 "sampled look like it)\n",
                 input.c_str(), format_used.c_str(), detected->files_recognized,
                 detected->files_sampled);
  }
  const bool quiet = absl::GetFlag(FLAGS_quiet);
  uint64_t bad = 0;
  absl::Status first_bad;
  ReaderOptions reader_options;
  reader_options.on_bad_document = [&](const absl::Status& s) {
    ++bad;
    if (first_bad.ok()) first_bad = s;
    if (!quiet)
      std::fprintf(stderr, "tandem-index: skipped: %s\n", std::string(s.message()).c_str());
  };
  // Parsed input waiting for the inverter takes an eighth of the memory budget, the runs the rest.
  uint64_t memory_budget = static_cast<uint64_t>(std::max(16, absl::GetFlag(FLAGS_memory_mb)))
                           << 20;
  reader_options.threads = absl::GetFlag(FLAGS_threads);
  reader_options.chunk_bytes =
      static_cast<uint64_t>(std::max(1, absl::GetFlag(FLAGS_parse_chunk_kb))) << 10;
  if (reader_options.threads != 1) {
    reader_options.max_bytes_in_flight = memory_budget / 8;
    memory_budget -= reader_options.max_bytes_in_flight;
  }
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader(format_used, input, reader_options);
  if (!reader.ok()) return Fail(reader.status());

  index::IndexWriterOptions w;
  w.codec = absl::GetFlag(FLAGS_codec);
  w.analyzer.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  w.analyzer.stopwords = absl::GetFlag(FLAGS_stopwords);
  w.analyzer.stemmer = absl::GetFlag(FLAGS_stemmer);
  w.source_format = format_used;
  w.source_input = input;
  InverterOptions options;
  options.threads = absl::GetFlag(FLAGS_threads);
  options.memory_budget_bytes = memory_budget;
  options.progress = !quiet;
  options.store_text = absl::GetFlag(FLAGS_store_text);
  options.duplicate_ids = *duplicate_ids;
  options.before_write = [&](uint64_t documents) -> absl::Status {
    const double read = static_cast<double>(documents + bad);
    if (bad > 0 && static_cast<double>(bad) > max_bad_fraction * read) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%d of the %d documents read (%.1f%%) are malformed, more than --max-bad-fraction "
          "%g allows; nothing was written (the first: %s). Is --format right?",
          bad, static_cast<uint64_t>(read), 100.0 * bad / read, max_bad_fraction,
          first_bad.message()));
    }
    return absl::OkStatus();
  };
  if (absl::GetFlag(FLAGS_strict)) {
    options.input_check = [&]() -> absl::Status {
      if (first_bad.ok()) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat("--strict: ", first_bad.message()));
    };
  }
  if (!absl::GetFlag(FLAGS_attributes).empty()) {
    absl::StatusOr<std::vector<AttributeSpec>> specs =
        SelectAttributes(format_used, absl::GetFlag(FLAGS_attributes));
    if (!specs.ok()) return Fail(specs.status());
    options.attributes = *std::move(specs);
    if (absl::Status s = SetBitmapOptions(quiet, options); !s.ok()) return Fail(s);
  }
  absl::StatusOr<BuildSummary> summary = BuildIndex(**reader, output, w, options);
  if (!summary.ok()) return Fail(summary.status());
  if (absl::GetFlag(FLAGS_strict) && !first_bad.ok()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--strict: ", first_bad.message())));
  }
  summary->bad_documents = bad;
  std::printf("tandem-index: built %s\n  %s\n", output.c_str(), summary->Describe().c_str());
  return 0;
}

int Synth() {
  SynthOptions o;
  o.num_docs = absl::GetFlag(FLAGS_docs);
  o.termstats_path = absl::GetFlag(FLAGS_termstats);
  o.doclengths_path = absl::GetFlag(FLAGS_doclengths);
  o.query_files = absl::GetFlag(FLAGS_queries);
  absl::StatusOr<SynthVocabulary> vocabulary =
      ParseSynthVocabulary(absl::GetFlag(FLAGS_vocabulary));
  if (!vocabulary.ok()) return Fail(vocabulary.status());
  o.vocabulary = *vocabulary;
  o.postings_per_doc = absl::GetFlag(FLAGS_postings_per_doc);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.clustering = absl::GetFlag(FLAGS_clustering);
  o.cluster_docs = absl::GetFlag(FLAGS_cluster_docs);
  o.codec = absl::GetFlag(FLAGS_codec);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.progress = !absl::GetFlag(FLAGS_quiet);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output.empty()) return Fail(absl::InvalidArgumentError("synth needs --output DIR"));
  if (!absl::GetFlag(FLAGS_attribute_columns).empty()) {
    absl::StatusOr<std::vector<SynthAttribute>> attributes =
        ParseSynthAttributes(absl::GetFlag(FLAGS_attribute_columns));
    if (!attributes.ok()) return Fail(attributes.status());
    o.attributes = *std::move(attributes);
    if (absl::Status s = SetBitmapOptions(absl::GetFlag(FLAGS_quiet), o); !s.ok()) return Fail(s);
  }
  absl::StatusOr<SynthSummary> summary = BuildSyntheticIndex(o, output);
  if (!summary.ok()) return Fail(summary.status());
  const std::string text = absl::StrReplaceAll(summary->Describe(), {{"\n", "\n  "}});
  std::printf("tandem-index: built %s\n  %s\n", output.c_str(), text.c_str());
  return 0;
}

int Inspect(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<index::Index>> opened = index::Index::Open(dir);
  if (!opened.ok()) return Fail(opened.status());
  const index::Index& idx = **opened;
  const index::IndexManifest& m = idx.manifest();
  std::printf("index      %s\n", dir.c_str());
  std::printf("id         %s\nbuilt      %s by %s\n", m.index_id.c_str(), m.build_time.c_str(),
              m.builder.c_str());
  std::printf("source     %s (%s)\n", m.source_input.c_str(), m.source_format.c_str());
  std::printf("format     version %u, codec %s, %u postings per block\n", m.format_version,
              m.codec.c_str(), m.block_size);
  std::printf("analyzer   %s\n", m.analyzer.Describe().c_str());
  std::printf("documents  %u (average length %.2f terms)\n", m.stats.num_docs,
              m.stats.avg_doc_length);
  if (const index::ShardManifest* s = idx.shard()) {
    std::printf("shard      shard %u of %u, docIDs %u..%u of %u\n", s->shard, s->shards,
                s->first_docid, s->first_docid + m.stats.num_docs - 1, s->collection_num_docs);
    std::printf(
        "bm25       the collection's statistics (index %s): %u documents, average length "
        "%.2f terms, each term's collection df (%s)\n",
        s->collection_index_id.c_str(), s->collection_num_docs, s->collection_avg_doc_length,
        index::kCollectionDfFile);
  }
  std::printf("terms      %llu\npostings   %llu\n",
              static_cast<unsigned long long>(m.stats.num_terms),
              static_cast<unsigned long long>(m.stats.num_postings));
  uint64_t list_bytes = 0;
  std::vector<index::TermInfo> longest;
  for (uint64_t i = 0; i < idx.num_terms(); ++i) {
    index::TermInfo t = idx.term_at(i);
    list_bytes += t.list_bytes;
    longest.push_back(t);
    if (longest.size() > 64) {
      std::partial_sort(longest.begin(), longest.begin() + 10, longest.end(),
                        [](const auto& a, const auto& b) { return a.df > b.df; });
      longest.resize(10);
    }
  }
  std::sort(longest.begin(), longest.end(),
            [](const auto& a, const auto& b) { return a.df > b.df; });
  if (longest.size() > 10) longest.resize(10);
  std::printf("bytes      %llu in all files; posting lists %llu (%.2f bits per posting)\n",
              static_cast<unsigned long long>(idx.index_bytes()),
              static_cast<unsigned long long>(list_bytes),
              m.stats.num_postings ? 8.0 * list_bytes / m.stats.num_postings : 0.0);
  const int files = (idx.shard() != nullptr ? 5 : 4) + (idx.attributes() != nullptr ? 1 : 0);
  if (m.files) {
    std::printf("checksums  OK (all %d files, each the one the manifest names)\n", files);
  } else {
    std::printf("checksums  OK (all %d files; the manifest predates naming its files)\n", files);
  }
  if (const filter::AttributeIndex* attributes = idx.attributes()) {
    std::printf("attributes %zu fields, %s bitmaps, %s (%s)\n", attributes->fields().size(),
                std::string(filter::BitmapCodecName(attributes->codec())).c_str(),
                absl::StrFormat("%.2f MB", attributes->bitmap_bytes() / 1e6).c_str(),
                index::kAttributesFile);
    for (const filter::AttributeField& f : attributes->fields()) {
      uint64_t pairs = 0;
      for (size_t i = 0; i < f.columns.num_columns(); ++i) pairs += f.columns.Column(i).Count();
      std::string range;
      if (f.kind == filter::AttributeKind::kInteger && !f.buckets.empty()) {
        range = absl::StrCat(", ", f.buckets.front().lo, "..", f.buckets.back().hi);
      }
      std::printf("  %-16s %-7s %8zu values%s, %llu document values, %s\n", f.name.c_str(),
                  std::string(filter::AttributeKindName(f.kind)).c_str(), f.cardinality(),
                  range.c_str(), static_cast<unsigned long long>(pairs),
                  absl::StrFormat("%.2f MB", f.columns.words.size() * 4 / 1e6).c_str());
    }
  }
  absl::Status lists = idx.VerifyPostings();
  if (!lists.ok()) return Fail(lists);
  std::printf("lists      OK (every block of %llu lists decodes and matches its skip data)\n",
              static_cast<unsigned long long>(idx.num_terms()));
  std::printf("longest lists:\n");
  for (const auto& t : longest) {
    std::printf("  %-24s df %u\n", std::string(t.term).c_str(), t.df);
  }
  return 0;
}

int Lookup(const std::string& dir, const std::string& raw) {
  absl::StatusOr<std::unique_ptr<index::Index>> opened = index::Index::Open(dir);
  if (!opened.ok()) return Fail(opened.status());
  const index::Index& idx = **opened;
  std::string term = raw;
  std::optional<index::TermInfo> info = idx.Lookup(term);
  if (!info) {
    std::string analyzed;
    if (!idx.analyzer().Normalize(raw, &analyzed)) {
      std::fprintf(stderr,
                   "tandem-index: '%s' is a stop word of this index's analyzer (%s): it is not "
                   "indexed, and queries drop it\n",
                   raw.c_str(), idx.analyzer().config().Describe().c_str());
      return 2;
    }
    if (analyzed != raw) {
      info = idx.Lookup(analyzed);
      if (info) {
        std::printf("'%s' is not an index term; its analyzed form '%s' is:\n", raw.c_str(),
                    analyzed.c_str());
        term = analyzed;
      }
    }
  }
  if (!info) {
    std::fprintf(stderr, "tandem-index: term '%s' is not in the index\n", raw.c_str());
    return 2;
  }
  std::printf("term        %s\ndf          %u\ncf          %llu\n", term.c_str(), info->df,
              static_cast<unsigned long long>(info->cf));
  if (idx.shard() != nullptr) {
    std::printf("coll. df    %u (in the collection's %u documents)\n", idx.bm25_df(*info),
                idx.bm25_num_docs());
  }
  std::printf("idf         %.6f\n", idx.Bm25TermIdf(*info));
  std::printf("list        offset %llu, %llu bytes, %u blocks, %.2f bits per posting\n",
              static_cast<unsigned long long>(info->list_offset),
              static_cast<unsigned long long>(info->list_bytes), info->num_blocks,
              8.0 * info->list_bytes / info->df);
  std::printf("max score   %.6f (k1=%.2f, b=%.2f)\n", info->max_score, idx.manifest().bm25.k1,
              idx.manifest().bm25.b);
  absl::StatusOr<index::PostingListView> list = idx.postings(*info);
  if (!list.ok()) return Fail(list.status());
  std::vector<uint32_t> docs(index::kBlockSize), freqs(index::kBlockSize);
  absl::Status s = list->DecodeDocids(idx.codec(), 0, docs.data());
  if (s.ok()) s = list->DecodeFreqs(idx.codec(), 0, freqs.data());
  if (!s.ok()) return Fail(s);
  const int n = std::min<int>(absl::GetFlag(FLAGS_postings), list->block_postings(0));
  std::printf("first postings (docid:tf external-id):\n");
  for (int i = 0; i < n; ++i) {
    std::printf("  %u:%u %s\n", docs[i], freqs[i], std::string(idx.external_id(docs[i])).c_str());
  }
  return 0;
}

// Writes DIR/gpu_layouts.bin: every list in the GPU engine's layouts, so that the device cache
// copies a list at first use instead of transcoding it.
int GpuLayouts(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<index::Index>> opened = index::Index::Open(dir);
  if (!opened.ok()) return Fail(opened.status());
  const index::Index& idx = **opened;
  const int threads = absl::GetFlag(FLAGS_threads) > 0
                          ? absl::GetFlag(FLAGS_threads)
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string path = dir + "/" + gpu::kStoredLayoutsFile;
  const absl::Time start = absl::Now();
  if (absl::Status s = gpu::WriteGpuLayouts(idx, {}, path, threads); !s.ok()) return Fail(s);
  absl::StatusOr<std::unique_ptr<gpu::StoredGpuLayouts>> stored =
      gpu::StoredGpuLayouts::Open(path, idx);
  if (!stored.ok()) return Fail(stored.status());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const uint64_t bytes = std::filesystem::file_size(path);
  std::printf("wrote %s: %llu lists, %.2f GB, %.2f bits per posting, in %.1f s on %d threads\n",
              path.c_str(), static_cast<unsigned long long>(idx.num_terms()), bytes / 1e9,
              8.0 * bytes / std::max<uint64_t>(1, idx.stats().num_postings), seconds, threads);
  return 0;
}

// Builds an index from another engine's index: a CIFF file. The analyzer flags name the analyzer
// that made the file's terms, which queries are then analyzed with (CIFF does not record it).
int Import(const std::string& file) {
  const std::string format = absl::GetFlag(FLAGS_format);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (format != "ciff" || output.empty()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "import needs --format ciff FILE --output DIR",
        format.empty() || format == "ciff" ? "" : absl::StrCat(" (not --format ", format, ")"))));
  }
  index::IndexWriterOptions w;
  w.codec = absl::GetFlag(FLAGS_codec);
  w.analyzer.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  w.analyzer.stopwords = absl::GetFlag(FLAGS_stopwords);
  w.analyzer.stemmer = absl::GetFlag(FLAGS_stemmer);
  absl::StatusOr<CiffImportSummary> summary = ImportCiff(file, output, w);
  if (!summary.ok()) {
    return Fail(absl::Status(summary.status().code(),
                             absl::StrCat(summary.status().message(), "; nothing was written")));
  }
  std::printf(
      "tandem-index: imported %s into %s\n  %s\n  analyzer recorded: %s (CIFF does not "
      "say which made its terms; --tokenizer, --stopwords and --stemmer set it)\n",
      file.c_str(), output.c_str(), summary->Describe().c_str(), w.analyzer.Describe().c_str());
  return 0;
}

// Writes an index in another engine's format: CIFF, or PISA's binary collection.
int Export(const std::string& dir, const std::string& out) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "ciff" && format != "pisa") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("export needs --format ciff or --format pisa",
                     format.empty() ? "" : absl::StrCat(", not ", format))));
  }
  absl::StatusOr<std::unique_ptr<index::Index>> opened = index::Index::Open(dir);
  if (!opened.ok()) return Fail(opened.status());
  const index::Index& idx = **opened;
  const absl::Time start = absl::Now();
  const absl::Status s = format == "ciff" ? ExportCiff(idx, out) : ExportPisa(idx, out);
  if (!s.ok()) return Fail(s);
  std::printf(
      "tandem-index: exported %s as %s to %s%s: %u documents, %llu terms, %llu postings, "
      "%.1f s\n",
      dir.c_str(), format.c_str(), out.c_str(),
      format == "pisa" ? ".{docs,freqs,sizes,terms,documents}" : "", idx.num_docs(),
      static_cast<unsigned long long>(idx.num_terms()),
      static_cast<unsigned long long>(idx.stats().num_postings),
      absl::ToDoubleSeconds(absl::Now() - start));
  return 0;
}

// Cuts DIR into shards of consecutive docID ranges under OUT (index_builder/shard.h).
int Shard(const std::string& dir, const std::string& out) {
  const int shards = absl::GetFlag(FLAGS_shards);
  if (shards < 1) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("shard needs --shards S, at least 1",
                     shards == 0 ? "" : absl::StrCat(" (not ", shards, ")"))));
  }
  absl::StatusOr<std::unique_ptr<index::Index>> opened = index::Index::Open(dir);
  if (!opened.ok()) return Fail(opened.status());
  const absl::Time start = absl::Now();
  absl::StatusOr<ShardSummary> summary = ShardIndex(
      **opened, out,
      {.shards = static_cast<uint32_t>(shards), .threads = absl::GetFlag(FLAGS_threads)});
  if (!summary.ok()) {
    return Fail(absl::Status(summary.status().code(),
                             absl::StrCat(summary.status().message(), "; nothing was written")));
  }
  std::printf("tandem-index: sharded %s into %s in %.1f s\n  %s\n", dir.c_str(), out.c_str(),
              absl::ToDoubleSeconds(absl::Now() - start),
              absl::StrReplaceAll(summary->Describe(), {{"\n", "\n  "}}).c_str());
  return 0;
}

}  // namespace
}  // namespace tandem::index_builder

// What --help and a wrong command line print. The codecs are the registry's.
std::string Usage() {
  return absl::StrCat(
      "tandem-index builds and inspects Tandem indexes.\n"
      "  tandem-index build --input PATH --format FORMAT|auto --output DIR [--codec ",
      absl::StrJoin(tandem::index::BlockCodecNames(), "|"),
      "] [--threads N]\n"
      "      [--strict | --max-bad-fraction F] [--duplicate-ids fail|keep-first|keep-last] "
      "[--store-text]\n"
      "      [--attributes FIELD[:keyword|:integer],...|all] [--bitmap-codec plwah|wah] "
      "[--gpu auto|off|required]\n"
      "  tandem-index synth --docs N --termstats FILE --doclengths FILE [--queries FILE,...]\n"
      "      --vocabulary query-terms|all [--postings-per-doc P] [--clustering F] --seed S\n"
      "      [--attribute-columns NAME:CARDINALITY[:uniform|zipf],...]\n"
      "      --output DIR\n"
      "  tandem-index inspect DIR\n"
      "  tandem-index lookup DIR TERM\n"
      "  tandem-index gpu-layouts DIR [--threads N]   (the GPU engine's list layouts, stored)\n"
      "  tandem-index import --format ciff FILE --output DIR [--codec CODEC]\n"
      "      [--tokenizer T --stopwords S --stemmer M]   (the analyzer that made the file's "
      "terms;\n"
      "      default Anserini's English one). Lists in any term order; doc records in docid order\n"
      "  tandem-index export --format ciff DIR OUT.ciff\n"
      "  tandem-index export --format pisa DIR BASE   (PISA's binary collection: BASE.docs, "
      ".freqs,\n"
      "      .sizes, and BASE.terms, BASE.documents one a line)\n"
      "  tandem-index shard --shards S DIR OUT [--threads N]   (OUT/shard-000 ...: consecutive "
      "docID\n"
      "      ranges, each scoring with the whole collection's BM25 statistics)");
}

int main(int argc, char** argv) {
  using namespace tandem::index_builder;
  const std::string usage = Usage();
  const std::vector<std::string> args =
      tandem::base::ParseCommandLineOrExit(argc, argv,
                                           {.name = "tandem-index",
                                            .usage = usage,
                                            .main_file = __FILE__,
                                            .groups = tandem::tools::IndexExpertFlagGroups()});
  const std::string command = args.empty() ? "" : args[0];
  if (command == "build" && args.size() == 1) return Build();
  if (command == "synth" && args.size() == 1) return Synth();
  if (command == "inspect" && args.size() == 2) {
    const int rc = Inspect(args[1]);
    return rc != 0 ? rc : tandem::InspectLive(args[1]);
  }
  if (command == "lookup" && args.size() == 3) return Lookup(args[1], args[2]);
  if (command == "gpu-layouts" && args.size() == 2) return GpuLayouts(args[1]);
  if (command == "import" && args.size() == 2) return Import(args[1]);
  if (command == "export" && args.size() == 3) return Export(args[1], args[2]);
  if (command == "shard" && args.size() == 3) return Shard(args[1], args[2]);
  std::fprintf(stderr, "%s\n", usage.c_str());
  return 2;
}
