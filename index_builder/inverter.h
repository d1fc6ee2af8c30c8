// File: inverter.h
//
// Builds an index from a stream of documents with bounded memory: one thread reads the documents
// in order (a reader opened with ReaderOptions::threads parses ahead on its own threads), N threads
// analyze and invert batches of documents into in-memory runs (term -> postings), and a run that
// outgrows its share of the memory budget is sorted by term and spilled to a temporary file. At the
// end all runs are merged term by term (k-way), lists are encoded in parallel and written through
// IndexWriter, so collections larger than memory build in one pass over the input. The spilled
// runs' file format and their merge are in spill_run.h.
//
//   InverterOptions options;
//   options.threads = 8;
//   TANDEM_ASSIGN_OR_RETURN(BuildSummary s,
//                           BuildIndex(*reader, "/srv/idx", writer_options, options));
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "index/index_writer.h"
#include "index_builder/attribute_collector.h"
#include "index_builder/document_reader.h"

namespace tandem::index_builder {

// What a build does with a document whose external id an earlier document already has.
enum class DuplicateIds {
  kFail,       // read on to count them all, then fail the build; nothing is written
  kKeepFirst,  // skip the later documents, count them, and say so in the summary
  kKeepLast,   // each later document replaces the earlier one: it is dropped from the index and
               // the documents after it move down one docID; counted in the summary
};

// "fail", "keep-first", "keep-last"; nullopt for anything else.
std::optional<DuplicateIds> ParseDuplicateIds(absl::string_view name);

struct InverterOptions {
  int threads = 0;                            // 0: hardware concurrency
  uint64_t memory_budget_bytes = 1ull << 30;  // for all in-memory runs together
  std::string spill_dir;                      // "" : next to the output directory
  // Run data in each range of terms the merge's threads take (spill_run.h); 0: chosen from the
  // threads and the memory budget. Smaller ranges balance better and hold less memory.
  uint64_t merge_range_bytes = 0;
  bool progress = false;  // progress on stderr: phase, percent, rate, ETA (progress.h)
  // Called after every document read; a non-OK status stops the build with that status (--strict
  // uses it to fail on the first bad document).
  std::function<absl::Status()> input_check;
  // Called once the whole input is read, with the number of documents kept, before anything is
  // written to the output; a non-OK status fails the build (tandem-index checks the share of bad
  // documents here). Whatever fails, an index already at the output stays as it was.
  std::function<absl::Status(uint64_t documents)> before_write;
  DuplicateIds duplicate_ids = DuplicateIds::kFail;
  // Keep each document's indexed text as its stored field "text", for snippets (--store-text).
  bool store_text = false;
  // Attribute fields stored as bitmaps for filters (--attributes); "length" is the document's
  // length in terms. Empty: the index stores no attributes.
  std::vector<AttributeSpec> attributes;
  filter::BitmapCodec bitmap_codec = filter::BitmapCodec::kPlwah;
  // Builds each field's bitmaps (the GPU builder, --gpu); null: the CPU builder.
  BitmapBuilder bitmap_builder;
};

struct BuildSummary {
  uint64_t documents = 0;
  uint64_t bad_documents = 0;        // reported and skipped by the reader
  uint64_t duplicate_documents = 0;  // documents dropped for a repeated id (kKeepFirst/kKeepLast)
  DuplicateIds duplicate_ids = DuplicateIds::kFail;
  uint64_t terms = 0;
  uint64_t postings = 0;
  uint64_t index_bytes = 0;
  uint64_t postings_bytes = 0;  // postings.bin alone
  uint64_t text_bytes = 0;      // indexed text, in bytes
  uint64_t spilled_runs = 0;
  std::vector<AttributeStats> attributes;  // per stored attribute field
  double attribute_seconds = 0;            // building their bitmaps
  double seconds = 0;
  // The build's phases (their sum is about `seconds`): reading, analyzing and inverting the
  // documents, spilling the runs; merging them and encoding and writing the lists; the rest of the
  // index (lexicon, document table, attributes) and its files.
  double invert_seconds = 0;
  double merge_seconds = 0;
  double finish_seconds = 0;

  double bits_per_posting() const {
    return postings == 0 ? 0.0 : 8.0 * static_cast<double>(postings_bytes) / postings;
  }
  // "documents 5183, terms 26,914, postings 481,020, index 1.9 MB, 24.1 bits/posting, ..."
  std::string Describe() const;

 private:
  std::string DescribeCore(double s) const;
};

// Reads every document of `reader` and writes the index to `output`. The reader's bad-document
// callback is left to the caller (strict mode: make it record the error and return it afterwards).
// An input with no documents is INVALID_ARGUMENT, and so are repeated external ids under
// DuplicateIds::kFail (the message names the first repeat and its place); in every failure the
// output is left as it was.
absl::StatusOr<BuildSummary> BuildIndex(DocumentReader& reader, const std::string& output,
                                        const index::IndexWriterOptions& writer_options,
                                        const InverterOptions& options);

}  // namespace tandem::index_builder
