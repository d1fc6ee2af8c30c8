#include "index_builder/inverter.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "base/stale_files.h"
#include "base/status_macros.h"
#include "index/bm25.h"
#include "index/posting_list.h"
#include "index_builder/progress.h"
#include "index_builder/run_merge.h"
#include "index_builder/spill_run.h"

namespace tandem::index_builder {
namespace fs = std::filesystem;
namespace {

// A batch for the inverting threads ends at this many documents or this much text, whichever comes
// first: small enough that every thread gets many batches of a collection of long documents.
constexpr size_t kBatchDocuments = 256;
constexpr size_t kBatchTextBytes = 256 << 10;
// Per-entry overhead of a run's hash map, for the memory estimate.
constexpr size_t kEntryOverhead = 64;

struct Batch {
  uint64_t index = 0;  // batch sequence number
  uint32_t first_docid = 0;
  std::vector<Document> docs;
};

// Document-table rows of one batch, handed back in batch order.
struct DocRow {
  std::string external_id;
  uint32_t length = 0;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::pair<std::string, std::string>> attributes;
};

// Parse → invert hand-off, bounded so parsing cannot run ahead of the workers' memory.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}
  void Push(Batch batch) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return queue_.size() < capacity_; });
    queue_.push_back(std::move(batch));
    not_empty_.notify_one();
  }
  std::optional<Batch> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return std::nullopt;
    Batch b = std::move(queue_.front());
    queue_.pop_front();
    not_full_.notify_one();
    return b;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Batch> queue_;
  size_t capacity_;
  bool closed_ = false;
};

// State shared by the build's threads.
struct Build {
  const index::Analyzer* analyzer = nullptr;
  index::IndexWriter* writer = nullptr;
  AttributeCollector* attributes = nullptr;  // null: no attributes stored
  std::string spill_dir;
  uint64_t worker_budget = 0;

  std::mutex rows_mu;
  std::map<uint64_t, std::vector<DocRow>> finished_rows;  // by batch index
  uint64_t next_batch_to_write = 0;
  absl::Status status;  // first error of any thread, under rows_mu

  std::mutex runs_mu;
  std::vector<SpilledRun> runs;

  std::atomic<uint64_t> documents{0};
  std::atomic<uint64_t> text_bytes{0};
  std::atomic<uint64_t> postings{0};  // inverted so far: the merge's total
  bool store_text = false;

  // Set with `status`; read without the lock on every document and batch.
  std::atomic<bool> has_failed{false};

  void Fail(absl::Status s) {
    std::lock_guard<std::mutex> lock(rows_mu);
    if (status.ok()) status = std::move(s);
    has_failed = true;
  }
  bool failed() const { return has_failed.load(std::memory_order_relaxed); }

  // Adds a finished batch's rows and writes every batch that is now next in docID order.
  void FinishRows(uint64_t batch_index, std::vector<DocRow> rows) {
    std::lock_guard<std::mutex> lock(rows_mu);
    finished_rows.emplace(batch_index, std::move(rows));
    while (status.ok()) {
      auto it = finished_rows.find(next_batch_to_write);
      if (it == finished_rows.end()) break;
      for (const DocRow& r : it->second) {
        absl::Status s = writer->AddDocument(r.external_id, r.length, r.fields);
        if (!s.ok()) {
          status = s;
          has_failed = true;
          break;
        }
        if (attributes != nullptr) attributes->Add(writer->num_docs() - 1, r.attributes, r.length);
      }
      finished_rows.erase(it);
      ++next_batch_to_write;
    }
  }

  absl::Status Spill(MemoryRun& run) {
    size_t slot;
    std::string path;
    {
      std::lock_guard<std::mutex> lock(runs_mu);
      slot = runs.size();
      path = absl::StrCat(spill_dir, "/run-", slot, ".bin");
      runs.emplace_back().path = path;  // removed with the spill directory, whatever happens
    }
    TANDEM_ASSIGN_OR_RETURN(SpilledRun spilled, WriteRun(run, path));
    {
      std::lock_guard<std::mutex> lock(runs_mu);
      runs[slot] = std::move(spilled);
    }
    run.clear();
    return absl::OkStatus();
  }
};

void InvertWorker(Build& build, BatchQueue& queue) {
  MemoryRun run;
  uint64_t run_bytes = 0;
  std::vector<std::string> terms;
  absl::flat_hash_map<absl::string_view, uint32_t> tf;
  while (std::optional<Batch> batch = queue.Pop()) {
    if (build.failed()) continue;  // drain the queue so the reader never blocks
    std::vector<DocRow> rows(batch->docs.size());
    for (size_t i = 0; i < batch->docs.size(); ++i) {
      Document& doc = batch->docs[i];
      const uint32_t docid = batch->first_docid + static_cast<uint32_t>(i);
      terms.clear();
      build.analyzer->Analyze(doc.text, &terms);
      tf.clear();
      for (const std::string& t : terms) ++tf[t];
      for (const auto& [term, count] : tf) {
        auto [it, inserted] = run.try_emplace(std::string(term.data(), term.size()));
        if (inserted) run_bytes += term.size() + kEntryOverhead;
        if (it->second.size() == it->second.capacity()) {
          run_bytes += std::max<size_t>(it->second.capacity(), 2) * sizeof(uint32_t);
        }
        it->second.push_back(docid);
        it->second.push_back(count);
      }
      rows[i].external_id = std::move(doc.external_id);
      rows[i].length = static_cast<uint32_t>(terms.size());
      rows[i].fields = std::move(doc.fields);
      if (build.attributes != nullptr) rows[i].attributes = std::move(doc.attributes);
      if (build.store_text) rows[i].fields.emplace_back("text", doc.text);
      build.text_bytes += doc.text.size();
      build.postings += tf.size();
    }
    build.documents += batch->docs.size();
    build.FinishRows(batch->index, std::move(rows));
    if (run_bytes > build.worker_budget) {
      absl::Status s = build.Spill(run);
      if (!s.ok()) build.Fail(s);
      run_bytes = 0;
    }
  }
  if (!run.empty() && !build.failed()) {
    absl::Status s = build.Spill(run);
    if (!s.ok()) build.Fail(s);
  }
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return absl::StrFormat("%.1f %s", b, units[u]);
}

}  // namespace

namespace {

// The external ids read so far with the docID that holds each, every id copied once into stable
// chunks: about 24 bytes per document beyond the ids themselves. Used by the reading thread only.
class ExternalIdSet {
 public:
  // Records that `docid` holds `id`. Returns the docID that held it before, if any; under
  // `replace` the id then belongs to `docid`, otherwise it stays with the earlier one.
  std::optional<uint32_t> Insert(absl::string_view id, uint32_t docid, bool replace) {
    auto it = holder_.find(id);
    if (it != holder_.end()) {
      const uint32_t earlier = it->second;
      if (replace) it->second = docid;
      return earlier;
    }
    if (chunks_.empty() || chunk_used_ + id.size() > kChunkBytes) {
      chunks_.push_back(std::make_unique<char[]>(std::max(kChunkBytes, id.size())));
      chunk_used_ = 0;
    }
    char* copy = chunks_.back().get() + chunk_used_;
    std::memcpy(copy, id.data(), id.size());
    chunk_used_ += id.size();
    holder_.emplace(absl::string_view(copy, id.size()), docid);
    return std::nullopt;
  }

 private:
  static constexpr size_t kChunkBytes = 1 << 20;
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_used_ = 0;
  absl::flat_hash_map<absl::string_view, uint32_t> holder_;
};

}  // namespace

std::optional<DuplicateIds> ParseDuplicateIds(absl::string_view name) {
  if (name == "fail") return DuplicateIds::kFail;
  if (name == "keep-first") return DuplicateIds::kKeepFirst;
  if (name == "keep-last") return DuplicateIds::kKeepLast;
  return std::nullopt;
}

std::string BuildSummary::Describe() const {
  const double s = std::max(seconds, 1e-9);
  std::string attribute_text;
  for (const AttributeStats& a : attributes) {
    absl::StrAppend(&attribute_text, attribute_text.empty() ? "; attributes " : ", ", a.name, " (",
                    a.cardinality, " values, ", HumanBytes(a.bitmap_bytes),
                    a.not_integers > 0
                        ? absl::StrCat(", ", a.not_integers, " not integers, left out")
                        : std::string(),
                    ")");
  }
  if (!attributes.empty())
    absl::StrAppend(&attribute_text, absl::StrFormat(" in %.2f s", attribute_seconds));
  return attribute_text.empty() ? DescribeCore(s) : DescribeCore(s) + attribute_text;
}

std::string BuildSummary::DescribeCore(double s) const {
  return absl::StrFormat(
      "documents %d (%d bad, skipped%s), terms %d, postings %d, index %s (postings %s, %.2f "
      "bits/posting), %.1f s, %.0f docs/s, %.1f MB/s of text, %d spilled runs",
      documents, bad_documents,
      duplicate_documents == 0
          ? std::string()
          : absl::StrFormat("; %d dropped for a repeated id: the %s of each kept",
                            duplicate_documents,
                            duplicate_ids == DuplicateIds::kKeepLast ? "last" : "first"),
      terms, postings, HumanBytes(index_bytes), HumanBytes(postings_bytes), bits_per_posting(),
      seconds, documents / s, text_bytes / 1e6 / s, spilled_runs);
}

absl::StatusOr<BuildSummary> BuildIndex(DocumentReader& reader, const std::string& output,
                                        const index::IndexWriterOptions& writer_options,
                                        const InverterOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::Analyzer> analyzer,
                          index::Analyzer::Create(writer_options.analyzer));
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::IndexWriter> writer,
                          index::IndexWriter::Create(output, writer_options));

  // Spill files live in their own temporary directory, removed however the build ends.
  fs::path base =
      options.spill_dir.empty() ? fs::absolute(output).parent_path() : fs::path(options.spill_dir);
  // Named after this process: a later build removes the spill directories of killed ones.
  tandem::base::RemoveStaleSiblings(base.string(), ".tandem-spill-");
  std::string tmpl =
      (base / (tandem::base::PidTaggedSuffix(".tandem-spill-") + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a spill directory in '", base.string(), "'"));
  }
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } spill_guard{tmpl};

  Build build;
  build.analyzer = analyzer.get();
  build.writer = writer.get();
  build.spill_dir = tmpl;
  build.store_text = options.store_text;
  AttributeCollector attributes(options.attributes);
  if (!attributes.empty()) build.attributes = &attributes;
  build.worker_budget = std::max<uint64_t>(options.memory_budget_bytes / threads, 1 << 12);

  BatchQueue queue(2 * threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back([&] { InvertWorker(build, queue); });

  Progress progress(options.progress);
  absl::Status read_status;
  ExternalIdSet ids;
  const bool keep_last = options.duplicate_ids == DuplicateIds::kKeepLast;
  std::vector<uint32_t> replaced;  // docIDs whose id a later document took (kKeepLast)
  uint64_t duplicates = 0;
  std::string first_duplicate;  // "'id' at file:line"
  uint64_t next_docid = 0;
  uint64_t batch_index = 0;
  uint64_t batch_bytes = 0;
  Batch batch;
  auto flush_batch = [&] {
    batch_bytes = 0;
    next_docid += batch.docs.size();
    queue.Push(std::move(batch));
    batch = Batch();
    batch.index = ++batch_index;
    batch.first_docid = static_cast<uint32_t>(next_docid);
  };
  while (true) {
    Document doc;
    absl::StatusOr<bool> more = reader.Next(&doc);
    if (!more.ok()) {
      read_status = more.status();
      break;
    }
    if (!*more) break;
    if (options.input_check) {
      read_status = options.input_check();
      if (!read_status.ok()) break;
    }
    if (next_docid + batch.docs.size() >= UINT32_MAX - 1) {
      read_status = absl::ResourceExhaustedError("an index holds at most 2^32 - 2 documents");
      break;
    }
    const uint32_t docid = static_cast<uint32_t>(next_docid + batch.docs.size());
    if (std::optional<uint32_t> earlier = ids.Insert(doc.external_id, docid, keep_last)) {
      if (duplicates++ == 0) {
        first_duplicate = absl::StrCat("'", doc.external_id, "' at ", doc.location);
      }
      if (!keep_last) continue;
      replaced.push_back(*earlier);
    }
    batch_bytes += doc.text.size();
    batch.docs.push_back(std::move(doc));
    if (batch.docs.size() == kBatchDocuments || batch_bytes >= kBatchTextBytes) flush_batch();
    if (build.failed()) break;
    if (progress.Due()) {
      const ReadProgress read = reader.Progress();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.Report(
          "reading", static_cast<double>(read.bytes_read), static_cast<double>(read.bytes_total),
          absl::StrFormat("%d documents, %.0f docs/s, %.1f MB/s of text", build.documents.load(),
                          build.documents / s, build.text_bytes / 1e6 / s));
    }
  }
  if (read_status.ok() && !batch.docs.empty()) flush_batch();
  queue.Close();
  for (std::thread& t : workers) t.join();
  TANDEM_RETURN_IF_ERROR(read_status);
  const auto inverted = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(build.rows_mu);
    TANDEM_RETURN_IF_ERROR(build.status);
    if (!build.finished_rows.empty()) return absl::InternalError("document rows left unwritten");
  }

  if (duplicates > 0 && options.duplicate_ids == DuplicateIds::kFail) {
    return absl::InvalidArgumentError(absl::StrCat(
        duplicates,
        " document(s) repeat the external id of an earlier one (the first: ", first_duplicate,
        "); nothing was written. --duplicate-ids keep-first or keep-last keeps the first or the "
        "last document of each id"));
  }
  // Replaced documents leave the index; every later docID moves down past them.
  std::vector<uint32_t> new_docid;
  if (!replaced.empty()) {
    std::sort(replaced.begin(), replaced.end());
    TANDEM_RETURN_IF_ERROR(writer->RemoveDocuments(replaced));
    new_docid.resize(next_docid);
    size_t below = 0;
    for (uint32_t d = 0; d < next_docid; ++d) {
      const bool gone = below < replaced.size() && replaced[below] == d;
      new_docid[d] = gone ? kDroppedDocument : d - static_cast<uint32_t>(below);
      below += gone;
    }
    attributes.Renumber(new_docid);
  }
  if (writer->num_docs() == 0) {
    return absl::InvalidArgumentError(
        "the input holds no documents that could be read; nothing was written (is --format "
        "right? --format auto tells it from the files)");
  }
  if (options.before_write) TANDEM_RETURN_IF_ERROR(options.before_write(writer->num_docs()));

  BuildSummary summary;
  summary.documents = writer->num_docs();
  summary.duplicate_documents = duplicates;
  summary.duplicate_ids = options.duplicate_ids;
  summary.text_bytes = build.text_bytes;
  summary.spilled_runs = build.runs.size();
  TANDEM_RETURN_IF_ERROR(writer->FinishDocuments());
  TANDEM_RETURN_IF_ERROR(MergeRuns(build.runs, new_docid, *writer, threads,
                                   options.memory_budget_bytes, options.merge_range_bytes,
                                   build.postings, progress, summary));
  const auto merged = std::chrono::steady_clock::now();
  if (!attributes.empty()) {
    const auto begin = std::chrono::steady_clock::now();
    TANDEM_ASSIGN_OR_RETURN(
        std::unique_ptr<filter::AttributeIndex> stored,
        attributes.Finish(writer->num_docs(), options.bitmap_codec, options.bitmap_builder));
    writer->SetAttributes(std::move(stored));
    summary.attributes = attributes.stats();
    summary.attribute_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  }
  TANDEM_RETURN_IF_ERROR(writer->Finish());
  progress.Clear();

  const index::IndexFileBytes bytes = index::MeasureIndexFiles(output);
  summary.index_bytes = bytes.total;
  summary.postings_bytes = bytes.postings;
  const auto end = std::chrono::steady_clock::now();
  summary.seconds = std::chrono::duration<double>(end - start).count();
  summary.invert_seconds = std::chrono::duration<double>(inverted - start).count();
  summary.merge_seconds = std::chrono::duration<double>(merged - inverted).count();
  summary.finish_seconds = std::chrono::duration<double>(end - merged).count();
  return summary;
}

}  // namespace tandem::index_builder
