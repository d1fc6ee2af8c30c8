// File: segment_merge.cc
#include "live/segment_merge.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "index/bm25.h"
#include "index/index_writer.h"
#include "index/posting_list.h"
#include "live/attribute_merge.h"

namespace tandem::live {
namespace {

using Clock = std::chrono::steady_clock;

// Terms and postings of the inputs whose lists are renumbered and encoded together, on the
// threads, before this thread writes them in order: enough for every thread to have work, few
// enough that the encoded batch stays a few MB.
constexpr size_t kBatchTerms = 4096;
constexpr uint64_t kBatchPostings = uint64_t{1} << 20;
// The longest sleep of the throttle between two calls of MergeOptions::check.
constexpr auto kThrottleSlice = std::chrono::milliseconds(20);

// Counts the bytes read and written, calls MergeOptions::check every check_interval_bytes, and
// paces the writes: after each, it waits until the merge has run bytes_written / rate seconds.
class Pacer {
 public:
  explicit Pacer(const MergeOptions& options) : options_(options), start_(Clock::now()) {}

  absl::Status Check() { return options_.check ? options_.check() : absl::OkStatus(); }
  absl::Status Read(uint64_t bytes) {
    read_ += bytes;
    return Count(bytes);
  }
  // With `checked` false the wait does not call check (the merge is installed: it can no longer
  // stop).
  absl::Status Wrote(uint64_t bytes, bool checked = true) {
    written_ += bytes;
    if (checked) TANDEM_RETURN_IF_ERROR(Count(bytes));
    if (options_.max_bytes_per_second == 0) return absl::OkStatus();
    const auto due =
        start_ +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
            static_cast<double>(written_) / static_cast<double>(options_.max_bytes_per_second)));
    for (Clock::time_point now = Clock::now(); now < due; now = Clock::now()) {
      std::this_thread::sleep_for(std::min<Clock::duration>(due - now, kThrottleSlice));
      throttled_ += Clock::now() - now;
      if (checked) TANDEM_RETURN_IF_ERROR(Check());
    }
    return absl::OkStatus();
  }

  uint64_t read() const { return read_; }
  uint64_t written() const { return written_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double throttled_seconds() const { return std::chrono::duration<double>(throttled_).count(); }

 private:
  absl::Status Count(uint64_t bytes) {
    since_check_ += bytes;
    if (since_check_ < options_.check_interval_bytes) return absl::OkStatus();
    since_check_ = 0;
    return Check();
  }

  const MergeOptions& options_;
  const Clock::time_point start_;
  Clock::duration throttled_{};
  uint64_t read_ = 0, written_ = 0, since_check_ = 0;
};

// Bytes of the files in `dir` (an index: attributes.bin too, which MeasureIndexFiles leaves out).
uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) bytes += entry.file_size(ec);
  }
  return bytes;
}

bool SameBm25(const index::Bm25Params& a, const index::Bm25Params& b) {
  return std::memcmp(&a.k1, &b.k1, sizeof(float)) == 0 &&
         std::memcmp(&a.b, &b.b, sizeof(float)) == 0;
}

absl::Status CheckInputs(absl::Span<const MergeInput> inputs) {
  if (inputs.empty()) return absl::InvalidArgumentError("a merge needs at least one segment");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const index::Index* s = inputs[i].segment;
    if (s == nullptr) return absl::InvalidArgumentError(absl::StrCat("segment ", i, " is null"));
    if (s->shard() != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", s->directory(), "' is a shard of a collection, not a segment: ",
                       "its scores use the collection's statistics"));
    }
    absl::Span<const uint32_t> deleted = inputs[i].deleted;
    for (size_t k = 0; k < deleted.size(); ++k) {
      if (deleted[k] >= s->num_docs() || (k > 0 && deleted[k] <= deleted[k - 1])) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "segment '%s': deleted docIDs must increase and stay below its %d documents "
            "(the %d-th is %d)",
            s->directory(), s->num_docs(), k, deleted[k]));
      }
    }
    const index::IndexManifest& a = inputs[0].segment->manifest();
    const index::IndexManifest& b = s->manifest();
    std::string differ;
    if (a.codec != b.codec) {
      differ = absl::StrCat("codec ", a.codec, " and ", b.codec);
    } else if (!(a.analyzer == b.analyzer)) {
      differ = absl::StrCat("analyzer ", a.analyzer.Describe(), " and ", b.analyzer.Describe());
    } else if (!SameBm25(a.bm25, b.bm25)) {
      differ = absl::StrFormat("BM25 k1 %g b %g and k1 %g b %g", a.bm25.k1, a.bm25.b, b.bm25.k1,
                               b.bm25.b);
    }
    if (!differ.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("segments '", inputs[0].segment->directory(), "' and '", s->directory(),
                       "' differ (", differ, "); only segments of one index merge"));
    }
  }
  return CheckAttributesAgree(inputs);
}

// One input's list of a term.
struct TermSource {
  size_t input;
  index::TermInfo info;
};

// A term of the output: its inputs' lists, then (on a thread) the merged list, encoded.
struct ListJob {
  std::string term;
  std::vector<TermSource> sources;
  std::string encoded;
  uint32_t df = 0;  // 0: every posting was deleted; the term is left out
  uint64_t cf = 0;
  float max_score = 0.0f;
  uint64_t bytes_read = 0;
  absl::Status status;
};

// Decodes the job's lists, renumbers their postings (dropping the deleted ones) and encodes the
// merged list as a fresh build does: the norms of the merged documents and the idf of its df.
absl::Status MergeList(absl::Span<const MergeInput> inputs,
                       const std::vector<std::vector<uint32_t>>& new_docids,
                       const index::IndexWriter& writer, ListJob& job) {
  std::vector<uint32_t> docids, freqs;
  uint32_t block_docids[index::kBlockSize], block_freqs[index::kBlockSize];
  for (const TermSource& source : job.sources) {
    const index::Index& segment = *inputs[source.input].segment;
    const std::vector<uint32_t>& renumber = new_docids[source.input];
    absl::StatusOr<index::PostingListView> list = segment.postings(source.info);
    absl::Status s = list.status();
    for (uint32_t b = 0; s.ok() && b < list->num_blocks(); ++b) {
      s.Update(list->DecodeDocids(segment.codec(), b, block_docids));
      s.Update(list->DecodeFreqs(segment.codec(), b, block_freqs));
      for (uint32_t p = 0; s.ok() && p < list->block_postings(b); ++p) {
        if (block_docids[p] >= renumber.size()) {
          s = absl::DataLossError(absl::StrCat("docID ", block_docids[p], " past the documents"));
        } else if (renumber[block_docids[p]] != kDroppedDocument) {
          docids.push_back(renumber[block_docids[p]]);
          freqs.push_back(block_freqs[p]);
        }
      }
    }
    if (!s.ok()) {
      return absl::DataLossError(absl::StrCat("segment '", segment.directory(), "', term '",
                                              job.term, "': ", s.message()));
    }
    job.bytes_read += list->total_bytes();
  }
  job.df = static_cast<uint32_t>(docids.size());
  if (job.df == 0) return absl::OkStatus();
  for (uint32_t f : freqs) job.cf += f;
  const float idf = index::Bm25Idf(writer.num_docs(), job.df);
  absl::StatusOr<float> max_score = index::EncodePostingList(writer.codec(), docids, freqs,
                                                             writer.doc_norms(), idf, &job.encoded);
  if (!max_score.ok()) {
    return absl::InternalError(
        absl::StrCat("term '", job.term, "': ", max_score.status().message()));
  }
  job.max_score = *max_score;
  return absl::OkStatus();
}

// Runs MergeList over the batch on up to `threads` threads.
void MergeBatch(absl::Span<const MergeInput> inputs,
                const std::vector<std::vector<uint32_t>>& new_docids,
                const index::IndexWriter& writer, int threads, std::vector<ListJob>& batch) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j = next++; j < batch.size(); j = next++) {
      batch[j].status = MergeList(inputs, new_docids, writer, batch[j]);
    }
  };
  const size_t helpers = std::min<size_t>(std::max(threads, 1) - 1, batch.size() / 2);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

// Adds the live documents of every input in order; fills new_docids.
absl::Status AddDocuments(absl::Span<const MergeInput> inputs, index::IndexWriter& writer,
                          Pacer& pacer, std::vector<std::vector<uint32_t>>& new_docids,
                          MergeSummary& summary) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const index::Index& segment = *inputs[i].segment;
    absl::Span<const uint32_t> deleted = inputs[i].deleted;
    std::vector<uint32_t>& renumber = new_docids[i];
    renumber.assign(segment.num_docs(), kDroppedDocument);
    size_t next_deleted = 0;
    for (uint32_t d = 0; d < segment.num_docs(); ++d) {
      if (next_deleted < deleted.size() && deleted[next_deleted] == d) {
        ++next_deleted;
        ++summary.deleted_dropped;
        continue;
      }
      renumber[d] = writer.num_docs();
      const absl::string_view id = segment.external_id(d);
      uint64_t bytes = sizeof(uint32_t) + id.size();  // the length and the id
      fields.clear();
      for (const auto& [name, value] : segment.stored_fields(d)) {
        fields.emplace_back(std::string(name), std::string(value));
        bytes += 2 * sizeof(uint32_t) + name.size() + value.size();
      }
      TANDEM_RETURN_IF_ERROR(writer.AddDocument(id, segment.doc_length(d), fields));
      TANDEM_RETURN_IF_ERROR(pacer.Read(bytes));
      TANDEM_RETURN_IF_ERROR(pacer.Wrote(bytes));
    }
  }
  return absl::OkStatus();
}

// Merges the lexicons k-way in term byte order and writes every term's merged list.
absl::Status AddLists(absl::Span<const MergeInput> inputs,
                      const std::vector<std::vector<uint32_t>>& new_docids, int threads,
                      index::IndexWriter& writer, Pacer& pacer, uint64_t& terms,
                      uint64_t& term_bytes) {
  std::vector<uint64_t> ordinal(inputs.size(), 0);
  std::vector<index::TermInfo> head(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].segment->num_terms() > 0) head[i] = inputs[i].segment->term_at(0);
  }
  std::vector<ListJob> batch;
  uint64_t batch_postings = 0;
  auto flush = [&]() -> absl::Status {
    MergeBatch(inputs, new_docids, writer, threads, batch);
    for (ListJob& job : batch) {
      TANDEM_RETURN_IF_ERROR(job.status);
      TANDEM_RETURN_IF_ERROR(pacer.Read(job.bytes_read));
      if (job.df == 0) continue;
      TANDEM_RETURN_IF_ERROR(
          writer.AddEncodedList(job.term, job.df, job.cf, job.max_score, job.encoded));
      ++terms;
      term_bytes += job.term.size();
      TANDEM_RETURN_IF_ERROR(pacer.Wrote(job.encoded.size()));
    }
    batch.clear();
    batch_postings = 0;
    return absl::OkStatus();
  };
  while (true) {
    // The least term at the inputs' heads; inputs are few, so a scan beats a heap.
    const std::string* least = nullptr;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (ordinal[i] < inputs[i].segment->num_terms() &&
          (least == nullptr || head[i].term < *least)) {
        least = &head[i].term;
      }
    }
    if (least == nullptr) break;
    ListJob& job = batch.emplace_back();
    job.term = *least;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (ordinal[i] >= inputs[i].segment->num_terms() || head[i].term != job.term) continue;
      batch_postings += head[i].df;
      job.sources.push_back({i, std::move(head[i])});
      if (++ordinal[i] < inputs[i].segment->num_terms()) {
        head[i] = inputs[i].segment->term_at(ordinal[i]);
      }
    }
    if (batch.size() >= kBatchTerms || batch_postings >= kBatchPostings) {
      TANDEM_RETURN_IF_ERROR(flush());
    }
  }
  return flush();
}

}  // namespace

absl::StatusOr<MergeSummary> MergeSegments(absl::Span<const MergeInput> inputs,
                                           const std::string& output_dir,
                                           const MergeOptions& options) {
  TANDEM_RETURN_IF_ERROR(CheckInputs(inputs));
  uint64_t live = 0;
  for (const MergeInput& input : inputs) live += input.segment->num_docs() - input.deleted.size();
  if (live == 0) {
    return absl::InvalidArgumentError(
        "every document of the segments is deleted: drop them instead of merging them");
  }
  Pacer pacer(options);
  TANDEM_RETURN_IF_ERROR(pacer.Check());

  const index::IndexManifest& first = inputs[0].segment->manifest();
  index::IndexWriterOptions writer_options;
  writer_options.codec = first.codec;
  writer_options.analyzer = first.analyzer;
  writer_options.bm25 = first.bm25;
  writer_options.source_format = first.source_format;
  writer_options.source_input =
      absl::StrCat("merge of ", inputs.size(), " segments: '", inputs.front().segment->directory(),
                   "' .. '", inputs.back().segment->directory(), "'");
  // Segments are immutable: a merge never replaces an index.
  writer_options.overwrite = false;
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::IndexWriter> writer,
                          index::IndexWriter::Create(output_dir, writer_options));

  MergeSummary summary;
  std::vector<std::vector<uint32_t>> new_docids(inputs.size());
  TANDEM_RETURN_IF_ERROR(AddDocuments(inputs, *writer, pacer, new_docids, summary));
  TANDEM_RETURN_IF_ERROR(writer->FinishDocuments());
  const uint64_t document_bytes = pacer.written();
  uint64_t terms = 0, term_bytes = 0;
  TANDEM_RETURN_IF_ERROR(
      AddLists(inputs, new_docids, options.threads, *writer, pacer, terms, term_bytes));
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<filter::AttributeIndex> attributes,
                          MergeAttributes(inputs, new_docids, writer->num_docs()));
  // What Finish writes, paced before it while the merge can still stop: the document table (its
  // pools again, lengths and offsets), the lexicon (terms and about 16 bytes of figures each) and
  // the attributes. The rest, which estimates miss, is paced after.
  const uint64_t finish_bytes = document_bytes + 12 * uint64_t{writer->num_docs()} + term_bytes +
                                16 * terms +
                                (attributes != nullptr ? attributes->bitmap_bytes() : 0);
  TANDEM_RETURN_IF_ERROR(pacer.Wrote(finish_bytes));
  if (attributes != nullptr) writer->SetAttributes(std::move(attributes));
  TANDEM_RETURN_IF_ERROR(pacer.Check());
  TANDEM_RETURN_IF_ERROR(writer->Finish());

  const uint64_t written = DirectoryBytes(output_dir);
  const uint64_t spilled = document_bytes;  // the writer's spill of ids and fields, then copied
  if (written + spilled > pacer.written()) {
    pacer.Wrote(written + spilled - pacer.written(), /*checked=*/false).IgnoreError();
  }
  const index::IndexStats& stats = writer->manifest().stats;
  summary.documents = stats.num_docs;
  summary.terms = stats.num_terms;
  summary.postings = stats.num_postings;
  summary.bytes_read = pacer.read();
  summary.bytes_written = written;
  summary.seconds = pacer.seconds();
  summary.throttled_seconds = pacer.throttled_seconds();
  return summary;
}

}  // namespace tandem::live
