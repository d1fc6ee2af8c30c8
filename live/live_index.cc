#include "live/live_index.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/sync_directory.h"
#include "base/thread_name.h"
#include "base/thread_priority.h"
#include "index_builder/inverter.h"
#include "live/commit_point.h"

namespace tandem::live {

namespace fs = std::filesystem;

// What the next refresh makes searchable: new documents in the order of their latest write (an
// earlier version in the buffer is dropped when a later one comes) and the ids whose older,
// sealed versions it deletes.
struct LiveIndex::Buffered {
  std::vector<index_builder::Document> documents;
  std::vector<bool> dropped;                          // parallel to documents
  absl::flat_hash_map<std::string, size_t> position;  // id -> its newest buffered document
  absl::flat_hash_set<std::string> deletes;           // ids whose sealed versions go
  uint64_t operations = 0;
  uint64_t bytes = 0;          // of the buffered documents' text
  uint64_t last_sequence = 0;  // of the last operation applied
};

namespace {

// Reads documents from memory, for sealing a refresh's buffer with the offline builder.
class BufferReader : public index_builder::DocumentReader {
 public:
  BufferReader(const std::vector<index_builder::Document>& docs, const std::vector<bool>& dropped)
      : docs_(docs), dropped_(dropped) {}
  absl::StatusOr<bool> Next(index_builder::Document* doc) override {
    while (next_ < docs_.size() && dropped_[next_]) ++next_;
    if (next_ == docs_.size()) return false;
    *doc = docs_[next_++];  // a copy: a failed seal hands the buffer to the next refresh
    return true;
  }

 private:
  const std::vector<index_builder::Document>& docs_;
  const std::vector<bool>& dropped_;
  size_t next_ = 0;
};

}  // namespace

LiveIndex::LiveIndex(std::string dir, LiveIndexOptions options)
    : dir_(std::move(dir)), options_(std::move(options)), buffer_(std::make_unique<Buffered>()) {}

LiveIndex::~LiveIndex() {
  {
    absl::MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  if (refresher_.joinable()) refresher_.join();
  if (merger_.joinable()) merger_.join();
}

absl::StatusOr<std::unique_ptr<LiveIndex>> LiveIndex::Open(const std::string& dir,
                                                           const LiveIndexOptions& options) {
  if (options.refresh_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the refresh interval must not be negative");
  }
  std::unique_ptr<LiveIndex> live(new LiveIndex(dir, options));
  TANDEM_RETURN_IF_ERROR(live->Load());
  if (options.refresh_interval > absl::ZeroDuration()) {
    live->refresher_ = std::thread([l = live.get()] { l->RefreshLoop(); });
  }
  if (options.background_merges) {
    live->merger_ = std::thread([l = live.get()] { l->MergeLoop(); });
  }
  return live;
}

void LiveIndex::BecomeBackground(const char* name) const {
  base::NameThread(name);
  if (absl::Status lowered = base::LowerThreadPriority(options_.background_nice); !lowered.ok()) {
    std::fprintf(stderr, "tandem: live index '%s': %s keeps its priority: %s\n", dir_.c_str(), name,
                 std::string(lowered.message()).c_str());
  }
}

void LiveIndex::RefreshLoop() {
  BecomeBackground("tandem-refresh");
  // The interval bounds the time from a write to its visibility: an operation that misses one
  // refresh waits for the next to begin and then for its seal, so each refresh begins the last
  // seal's duration before the interval is up (at once when seals take longer than it).
  absl::Time next = absl::Now() + options_.refresh_interval;
  absl::MutexLock lock(&stop_mu_);
  while (!stopping_) {
    stop_mu_.AwaitWithDeadline(absl::Condition(&stopping_), next);
    if (stopping_) break;
    stop_mu_.Unlock();
    const absl::Time start = absl::Now();
    if (absl::Status refreshed = Refresh(); !refreshed.ok()) {
      std::fprintf(stderr, "tandem: live index '%s': refresh failed (retried): %s\n", dir_.c_str(),
                   std::string(refreshed.message()).c_str());
    }
    const absl::Time end = absl::Now();
    next = std::max(end, start + options_.refresh_interval - (end - start));
    stop_mu_.Lock();
  }
}

absl::Status LiveIndex::OpenLog() {
  if (log_ != nullptr) return absl::OkStatus();
  WriteAheadLogOptions log_options;
  // Writers sync outside the index's lock (Write), so that concurrent writes share a sync.
  log_options.sync_on_append = false;
  absl::StatusOr<std::unique_ptr<WriteAheadLog>> log =
      WriteAheadLog::Open(absl::StrCat(dir_, "/wal"), log_options);
  if (!log.ok()) {
    return absl::Status(
        log.status().code(),
        absl::StrCat("live index '", dir_, "', write-ahead log: ", log.status().message()));
  }
  log_ = *std::move(log);
  if (log_->torn_tail_bytes() > 0) {
    std::fprintf(stderr, "tandem: live index '%s': %s\n", dir_.c_str(),
                 log_->torn_tail_message().c_str());
  }
  live_directory_ = true;
  return absl::OkStatus();
}

absl::Status LiveIndex::Load() {
  absl::MutexLock lock(&mu_);
  TANDEM_ASSIGN_OR_RETURN(std::optional<CommitPoint> commit, ReadLatestCommitPoint(dir_));
  std::vector<SegmentView> views;
  std::error_code ec;
  live_directory_ = commit.has_value() || fs::exists(absl::StrCat(dir_, "/wal"), ec);
  if (!commit) {
    // An index built offline: one segment, the directory itself, nothing logged yet.
    CommitPoint fresh;
    fresh.segments.push_back({".", {}});
    commit = std::move(fresh);
  }
  commit_generation_ = commit->generation;
  next_segment_ = commit->next_segment;
  refreshed_through_ = commit->log_sequence;
  for (const auto& [id, v] : commit->versions) versions_[id] = {v.version, v.deleted};
  for (const CommittedSegment& s : commit->segments) {
    const std::string path = s.name == "." ? dir_ : absl::StrCat(dir_, "/", s.name);
    absl::StatusOr<std::shared_ptr<Segment>> segment = Segment::Open(
        path, s.name, options_.engine, s.name == "." ? options_.opened : nullptr, options_.device);
    if (!segment.ok()) {
      return absl::Status(segment.status().code(),
                          absl::StrCat("live index '", dir_, "', segment '", s.name,
                                       "': ", segment.status().message()));
    }
    TANDEM_ASSIGN_OR_RETURN(
        SegmentView view,
        SegmentView::Make(*std::move(segment),
                          std::make_shared<const std::vector<uint32_t>>(s.deleted)));
    views.push_back(std::move(view));
  }
  const index::Index& first = views.front().segment->index();
  segment_options_.codec = first.manifest().codec;
  segment_options_.analyzer = first.manifest().analyzer;
  segment_options_.bm25 = first.manifest().bm25;
  segment_options_.source_format = "live";
  // Stored text (tandem-index build --store-text) is each document's "text" field.
  if (first.num_docs() > 0) {
    for (const auto& [field, value] : first.stored_fields(0)) store_text_ |= field == "text";
  }
  if (const filter::AttributeIndex* attributes = first.attributes()) {
    bitmap_codec_ = attributes->codec();
    for (const filter::AttributeField& f : attributes->fields()) {
      attribute_specs_.push_back({f.name, f.kind == filter::AttributeKind::kInteger
                                              ? index_builder::AttributeType::kInteger
                                              : index_builder::AttributeType::kKeyword});
    }
  }
  segment_options_.overwrite = false;
  {
    std::lock_guard<std::mutex> s(snapshot_mu_);
    snapshot_ = std::make_shared<const Snapshot>(std::move(views), 0);
  }
  // An index built offline stays untouched until its first write.
  if (!live_directory_) return absl::OkStatus();
  RemoveUnreferenced();
  TANDEM_RETURN_IF_ERROR(OpenLog());
  TANDEM_RETURN_IF_ERROR(log_->Replay(
      refreshed_through_,
      [this](uint64_t sequence, absl::string_view record)
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
            absl::StatusOr<Operation> op = Operation::Decode(record);
            if (!op.ok()) {
              return absl::DataLossError(absl::StrCat("live index '", dir_, "', log record ",
                                                      sequence, ": ", op.status().message()));
            }
            Apply(*op);
            buffer_->last_sequence = sequence;
            return absl::OkStatus();
          }));
  // Everything acknowledged is searchable before the node says it serves.
  return RefreshLocked();
}

bool LiveIndex::Holds(const std::string& id) const {
  if (buffer_->position.contains(id)) return true;
  if (buffer_->deletes.contains(id)) return false;
  if (sealing_ != nullptr && sealing_->position.contains(id)) return true;
  if (sealing_ != nullptr && sealing_->deletes.contains(id)) return false;
  return snapshot()->Find(id).has_value();
}

WriteOutcome LiveIndex::Apply(const Operation& op) {
  const std::string& id = op.id();
  if (op.version) {
    auto it = versions_.find(id);
    if (it != versions_.end() && *op.version <= it->second.version) return WriteOutcome::kStale;
  }
  WriteOutcome outcome = WriteOutcome::kApplied;
  if (op.kind == Operation::Kind::kDelete && !Holds(id)) outcome = WriteOutcome::kNotFound;
  if (op.version) versions_[id] = {*op.version, op.kind == Operation::Kind::kDelete};
  Buffered& b = *buffer_;
  ++b.operations;
  if (auto it = b.position.find(id); it != b.position.end()) {
    b.dropped[it->second] = true;
    b.position.erase(it);
  }
  b.deletes.insert(id);  // any sealed version goes at the refresh
  if (op.kind == Operation::Kind::kIndex) {
    b.position[id] = b.documents.size();
    b.documents.push_back(op.document);
    b.dropped.push_back(false);
    bytes_indexed_ += op.document.text.size();
    b.bytes += op.document.text.size();
  }
  return outcome;
}

absl::StatusOr<std::vector<absl::StatusOr<WriteOutcome>>> LiveIndex::Write(
    absl::Span<const Operation> ops) {
  std::vector<absl::StatusOr<WriteOutcome>> outcomes(ops.size(), WriteOutcome::kApplied);
  std::vector<std::string> records;
  std::vector<size_t> logged;  // the ops whose records go to the log, in order
  for (size_t i = 0; i < ops.size(); ++i) {
    if (absl::Status valid = ops[i].Validate(); !valid.ok()) {
      outcomes[i] = valid;
      continue;
    }
    records.push_back(ops[i].Encode());
    logged.push_back(i);
  }
  if (records.empty()) return outcomes;
  {
    // Logged and applied under one lock, so the buffer takes operations in the log's order.
    absl::MutexLock lock(&mu_);
    TANDEM_RETURN_IF_ERROR(broken_);
    TANDEM_RETURN_IF_ERROR(OpenLog());
    TANDEM_ASSIGN_OR_RETURN(const uint64_t first, log_->AppendBatch(records));
    for (size_t j = 0; j < logged.size(); ++j) {
      outcomes[logged[j]] = Apply(ops[logged[j]]);
      buffer_->last_sequence = first + j;
    }
  }
  // Durable before acknowledged: one fdatasync covers every write logged before it, so writers
  // that arrive together share it (group commit).
  if (options_.sync_writes) {
    if (absl::Status synced = log_->Sync(); !synced.ok()) {
      // Applied to the buffer but perhaps not on disk: no refresh may show it (StartRefresh
      // syncs first and fails the same way), and the index takes no more writes.
      absl::MutexLock lock(&mu_);
      broken_ = synced;
      return synced;
    }
  }
  // A full buffer is sealed by the writer that filled it: writers wait rather than grow it.
  bool full = false;
  {
    absl::MutexLock lock(&mu_);
    full = buffer_->bytes >= options_.max_buffered_bytes;
  }
  if (full) TANDEM_RETURN_IF_ERROR(Refresh());
  return outcomes;
}

absl::Status LiveIndex::Refresh() {
  absl::MutexLock serial(&refresh_mu_);
  std::unique_ptr<Buffered> sealing;
  std::string name;
  {
    absl::MutexLock lock(&mu_);
    TANDEM_RETURN_IF_ERROR(StartRefresh(name));
    if (buffer_->operations == 0) return absl::OkStatus();
    sealing = std::move(buffer_);
    buffer_ = std::make_unique<Buffered>();
    sealing_ = sealing.get();
  }
  // Sealed without the writers' lock: writes go on into the next buffer meanwhile.
  absl::StatusOr<std::shared_ptr<Segment>> sealed = Seal(*sealing, name);
  absl::MutexLock lock(&mu_);
  sealing_ = nullptr;
  if (!sealed.ok()) {
    // Nothing is lost: the operations go back before those that came meanwhile, for the next try.
    Prepend(*sealing, *buffer_);
    buffer_ = std::move(sealing);
    return sealed.status();
  }
  return PublishRefresh(*sealing, *std::move(sealed));
}

absl::Status LiveIndex::RefreshLocked() {
  std::string name;
  TANDEM_RETURN_IF_ERROR(StartRefresh(name));
  if (buffer_->operations == 0) return absl::OkStatus();
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Segment> sealed, Seal(*buffer_, name));
  TANDEM_RETURN_IF_ERROR(PublishRefresh(*buffer_, std::move(sealed)));
  buffer_ = std::make_unique<Buffered>();
  return absl::OkStatus();
}

absl::Status LiveIndex::StartRefresh(std::string& name) {
  TANDEM_RETURN_IF_ERROR(broken_);
  if (buffer_->operations == 0) return absl::OkStatus();
  // Durable before searchable: nothing a failed sync may have lost ever answers a query.
  if (log_ != nullptr) {
    if (absl::Status synced = log_->Sync(); !synced.ok()) {
      broken_ = synced;
      return synced;
    }
  }
  const Buffered& b = *buffer_;
  if (std::find(b.dropped.begin(), b.dropped.end(), false) != b.dropped.end()) {
    name = absl::StrCat("_", next_segment_++);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Segment>> LiveIndex::Seal(const Buffered& b,
                                                         const std::string& name) {
  if (name.empty()) return nullptr;  // deletes alone
  const std::string path = absl::StrCat(dir_, "/", name);
  BufferReader reader(b.documents, b.dropped);
  index_builder::InverterOptions build;
  build.threads = std::max(1, options_.build_threads);
  build.memory_budget_bytes = 256ull << 20;
  build.attributes = attribute_specs_;
  build.bitmap_codec = bitmap_codec_;
  build.store_text = store_text_;
  absl::StatusOr<index_builder::BuildSummary> built =
      index_builder::BuildIndex(reader, path, segment_options_, build);
  if (!built.ok()) {
    return absl::Status(built.status().code(),
                        absl::StrCat("sealing segment '", name, "': ", built.status().message()));
  }
  sealed_bytes_.fetch_add(built->index_bytes, std::memory_order_relaxed);
  return Segment::Open(path, name, options_.engine, nullptr, options_.device);
}

absl::Status LiveIndex::PublishRefresh(const Buffered& b, std::shared_ptr<Segment> sealed) {
  std::vector<SegmentView> views = snapshot()->segments();
  // Deletes first, on the segments sealed before: each id's live version goes.
  std::vector<std::vector<uint32_t>> added(views.size());
  for (const std::string& id : b.deletes) {
    for (size_t v = views.size(); v-- > 0;) {
      for (uint32_t d : views[v].segment->Find(id)) {
        if (!views[v].is_deleted(d)) added[v].push_back(d);
      }
    }
  }
  for (size_t v = 0; v < views.size(); ++v) {
    if (added[v].empty()) continue;
    std::vector<uint32_t> deleted = *views[v].deleted;
    deleted.insert(deleted.end(), added[v].begin(), added[v].end());
    std::sort(deleted.begin(), deleted.end());
    deleted.erase(std::unique(deleted.begin(), deleted.end()), deleted.end());
    TANDEM_ASSIGN_OR_RETURN(
        views[v],
        SegmentView::Make(views[v].segment, std::make_shared<const std::vector<uint32_t>>(deleted),
                          &views[v]));
  }
  // Then the new documents, in a segment of their own.
  if (sealed != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(SegmentView view, SegmentView::Make(std::move(sealed), nullptr));
    views.push_back(std::move(view));
  }
  // A segment whose every document is deleted holds nothing a query could find; the last one
  // stays when all are, as the index's codec and analyzer go with it.
  const SegmentView last = views.back();
  views.erase(std::remove_if(views.begin(), views.end(),
                             [](const SegmentView& v) { return v.live_docs == 0; }),
              views.end());
  if (views.empty()) views.push_back(last);
  refreshed_through_ = std::max(refreshed_through_, b.last_sequence);
  ++refreshes_;
  Publish(std::move(views));
  {
    absl::MutexLock wake(&stop_mu_);
    merge_wanted_ = true;
  }
  return absl::OkStatus();
}

void LiveIndex::Publish(std::vector<SegmentView> views) {
  std::lock_guard<std::mutex> s(snapshot_mu_);
  snapshot_ = std::make_shared<const Snapshot>(std::move(views), snapshot_->generation() + 1);
}

void LiveIndex::Prepend(Buffered& earlier, const Buffered& later) {
  for (const auto& [id, at] : later.position) {
    if (auto it = earlier.position.find(id); it != earlier.position.end()) {
      earlier.dropped[it->second] = true;
      earlier.position.erase(it);
    }
  }
  // A delete that came later also drops the earlier buffered version.
  for (const std::string& id : later.deletes) {
    if (later.position.contains(id)) continue;
    if (auto it = earlier.position.find(id); it != earlier.position.end()) {
      earlier.dropped[it->second] = true;
      earlier.position.erase(it);
    }
  }
  const size_t offset = earlier.documents.size();
  earlier.documents.insert(earlier.documents.end(), later.documents.begin(), later.documents.end());
  earlier.dropped.insert(earlier.dropped.end(), later.dropped.begin(), later.dropped.end());
  for (const auto& [id, at] : later.position) earlier.position[id] = offset + at;
  earlier.deletes.insert(later.deletes.begin(), later.deletes.end());
  earlier.operations += later.operations;
  earlier.bytes += later.bytes;
  earlier.last_sequence = std::max(earlier.last_sequence, later.last_sequence);
}

absl::Status LiveIndex::Flush() {
  absl::MutexLock serial(&refresh_mu_);
  absl::MutexLock lock(&mu_);
  TANDEM_RETURN_IF_ERROR(RefreshLocked());
  if (!live_directory_) return absl::OkStatus();  // nothing written: the build is its commit
  // Write-ahead: the records the commit point covers are on disk before it is.
  TANDEM_RETURN_IF_ERROR(log_->Sync());
  TANDEM_RETURN_IF_ERROR(WriteCommitPoint());
  RemoveUnreferenced();
  return log_->DropThrough(refreshed_through_);
}

absl::Status LiveIndex::WriteCommitPoint() {
  CommitPoint commit;
  commit.generation = commit_generation_ + 1;
  commit.next_segment = next_segment_;
  commit.log_sequence = refreshed_through_;
  for (const SegmentView& v : snapshot()->segments()) {
    commit.segments.push_back({v.segment->name(), *v.deleted});
  }
  for (const auto& [id, v] : versions_) commit.versions[id] = {v.version, v.deleted};
  TANDEM_RETURN_IF_ERROR(WriteCommitPointFile(dir_, commit));
  commit_generation_ = commit.generation;
  return absl::OkStatus();
}

void LiveIndex::RemoveUnreferenced() {
  std::set<std::string> named;
  for (const SegmentView& v : snapshot()->segments()) named.insert(v.segment->name());
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    // Segment directories ("_7", and a build's "_7.tmp-..." left by a crash) of no commit point
    // or snapshot, and commit points older than the newest.
    uint64_t number = 0;
    const bool segment = absl::StartsWith(name, "_") &&
                         absl::SimpleAtoi(name.substr(1, name.find('.') - 1), &number);
    // A running merge's output, under a name it reserved, is not a leftover.
    const bool merging = segment && merging_.contains(number);
    if (segment && !merging && !named.contains(name) && e.is_directory(ec)) {
      fs::remove_all(e.path(), ec);
    }
    if (IsStaleCommitPoint(name, commit_generation_)) fs::remove(e.path(), ec);
  }
  (void)base::SyncDirectory(dir_);
}

std::shared_ptr<const Snapshot> LiveIndex::snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  return snapshot_;
}

LiveIndexStats LiveIndex::stats() const {
  absl::MutexLock lock(&mu_);
  LiveIndexStats s;
  const std::shared_ptr<const Snapshot> snap = snapshot();
  s.generation = commit_generation_;
  s.refreshes = refreshes_;
  s.segments = snap->segments().size();
  s.documents = snap->num_docs();
  for (const SegmentView& v : snap->segments()) s.deleted_documents += v.deleted->size();
  s.buffered_operations = buffer_->operations;
  s.last_sequence = log_ != nullptr ? log_->last_sequence() : 0;
  s.log_open = log_ != nullptr;
  s.bytes_indexed = bytes_indexed_;
  s.bytes_sealed = sealed_bytes_.load(std::memory_order_relaxed);
  s.bytes_merged = bytes_merged_;
  s.merges = merges_;
  return s;
}

}  // namespace tandem::live
