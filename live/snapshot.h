// File: snapshot.h
//
// What a live index's queries run against: its segments as one refresh left them, each an
// immutable index directory with the documents deleted from it since it was written. A snapshot
// never changes; a refresh publishes a new one, and a query holds the one it started on.
//
// A snapshot answers exactly as one index built from scratch over its live documents, in segment
// order: BM25's N, average length and each term's document frequency are the live documents'
// (CollectionStatistics, index/resolved_query.h), a segment's deleted documents are filtered out
// before ranking, and the segments' top k merge in rank order, ties to the earlier segment and the
// lower docID, which is the order of the documents' latest writes. Lucene scores with statistics
// that still count deleted documents until a merge drops them; a live Tandem index does not.
//
//   std::shared_ptr<const Snapshot> snapshot = live_index.snapshot();
//   TANDEM_ASSIGN_OR_RETURN(index::SearchResult r, snapshot->Search(query, context));
//   for (const index::Hit& h : r.hits) std::cout << snapshot->external_id(h.docid) << "\n";
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cpu/daat_engine.h"
#include "filter/bitmap.h"
#include "index/engine.h"
#include "index/index.h"
#include "index/query.h"

namespace tandem::live {

// Creates the engine that searches an index on a device (the node's GPU: live/ knows no device,
// the server supplies it).
using DeviceEngineFactory =
    std::function<absl::StatusOr<std::unique_ptr<index::Engine>>(const index::Index&)>;

// Which segments a device searches: those of at least `min_docs` documents get an engine from
// `create` when they open (a merged-away segment's engine, and its device cache, go with it);
// smaller ones, fresh from a refresh, are searched on the CPU, and the snapshot merges the two
// exactly. Segment "." uses `opened`, the engine the node created for the index it opened.
struct DeviceEngines {
  DeviceEngineFactory create;  // null: no device
  uint32_t min_docs = 1u << 20;
  const index::Engine* opened = nullptr;  // not owned; outlives the segment
};

// One immutable segment: an index directory, its CPU engine (and device engine, if any), and the
// table that finds a document by its external id (built at the first lookup: the ids are stored
// in docID order).
class Segment {
 public:
  // Opens the index at `dir`; `name` is how commit points name it ("_3", or "." for the index a
  // live index started from). `opened`, when given, is that index already open (the node's). A
  // device engine that cannot be created leaves the segment to the CPU (device_error() says why).
  static absl::StatusOr<std::shared_ptr<Segment>> Open(
      const std::string& dir, const std::string& name, const cpu::DaatEngineOptions& engine,
      std::shared_ptr<const index::Index> opened = nullptr, const DeviceEngines& device = {});

  const std::string& name() const { return name_; }
  const index::Index& index() const { return *index_; }
  const cpu::DaatEngine& engine() const { return *engine_; }
  // The engine that searches the segment on the device; null when the CPU does.
  const index::Engine* device_engine() const { return device_engine_; }
  const absl::Status& device_error() const { return device_error_; }
  uint32_t num_docs() const { return index_->num_docs(); }
  // The docIDs holding `external_id`, in increasing order (one unless a build kept repeats).
  std::vector<uint32_t> Find(absl::string_view external_id) const;

 private:
  Segment() = default;
  std::string name_;
  std::shared_ptr<const index::Index> index_;
  std::unique_ptr<cpu::DaatEngine> engine_;
  std::unique_ptr<index::Engine> device_owned_;
  const index::Engine* device_engine_ = nullptr;  // device_owned_, or the node's for "."
  absl::Status device_error_;
  mutable std::once_flag ids_built_;
  mutable std::vector<uint32_t> docids_by_id_;  // docIDs sorted by (external id, docID)
};

// The live document frequencies of a segment's terms under one set of deletes, each counted at
// its first use (CountDeletedPostings) and kept while snapshots share those deletes. Counts made
// under more deletes start from the predecessor's and count only the deletes added since (a
// refresh adds a second's worth to the thousands a large segment may hold); only one predecessor
// is kept.
class LiveDfs {
 public:
  // `before`: the counts under the deletes these extend, if any; `added`: the deletes since,
  // sorted.
  LiveDfs(std::shared_ptr<LiveDfs> before, std::vector<uint32_t> added);
  std::optional<uint32_t> Get(uint64_t ordinal) const;
  void Put(uint64_t ordinal, uint32_t live);
  std::shared_ptr<LiveDfs> before() const;
  const std::vector<uint32_t>& added() const { return added_; }

 private:
  mutable std::mutex mu_;
  absl::flat_hash_map<uint64_t, uint32_t> live_;  // by term ordinal
  std::shared_ptr<LiveDfs> before_;
  const std::vector<uint32_t> added_;
};

// A segment as one snapshot sees it.
struct SegmentView {
  std::shared_ptr<const Segment> segment;
  // Deleted docIDs, sorted; shared between snapshots until the next delete in the segment.
  std::shared_ptr<const std::vector<uint32_t>> deleted;
  // The documents not deleted, as the engines' filter; null when none is deleted.
  std::shared_ptr<const filter::Bitmap> live;
  uint32_t live_docs = 0;
  uint64_t live_length = 0;  // the live documents' lengths in terms, summed
  uint32_t base = 0;         // the snapshot docID of the segment's docID 0
  // The live document frequencies under `deleted`; null when nothing is deleted.
  std::shared_ptr<LiveDfs> dfs;

  // Builds the view of `segment` with `deleted` (sorted, each below its num_docs). `before`, when
  // given, is the segment's view with a subset of these deletes, whose counts the new view's
  // start from.
  static absl::StatusOr<SegmentView> Make(std::shared_ptr<const Segment> segment,
                                          std::shared_ptr<const std::vector<uint32_t>> deleted,
                                          const SegmentView* before = nullptr);
  bool is_deleted(uint32_t docid) const;
};

class Snapshot : public index::DocumentTable {
 public:
  // `views` in segment order; their bases are assigned here. `generation` counts refreshes.
  Snapshot(std::vector<SegmentView> views, uint64_t generation);

  const std::vector<SegmentView>& segments() const { return segments_; }
  uint64_t generation() const { return generation_; }
  // The live documents' count and average length, as a fresh build's manifest would give them.
  uint64_t num_docs() const { return num_docs_; }
  uint64_t total_doc_length() const { return total_length_; }
  float avg_doc_length() const { return avg_doc_length_; }
  // Documents held, deleted ones included: snapshot docIDs are below this.
  uint32_t docid_limit() const { return docid_limit_; }
  // The index as it was built: its one segment is ".", nothing deleted. Its docIDs are then the
  // built index's own, and so are filter bitmaps evaluated against its attributes.
  bool as_built() const {
    return segments_.size() == 1 && segments_[0].segment->name() == "." &&
           segments_[0].deleted->empty();
  }

  // The top k of `query` over the live documents, hits in snapshot docIDs. A filter is
  // `query.filter_expression`, evaluated against each segment's attributes
  // (filter::EvaluateFilterOnPart: a value a segment lacks matches nothing there; one that no
  // live document has matches nothing, where a fresh build would refuse it), or else
  // `query.filter`, over docid_limit() rows. INVALID_ARGUMENT for what index::ValidateQuery
  // refuses; engine and filter errors name the segment. `on_device`: the segments with a device
  // engine are searched there, the others on the CPU.
  absl::StatusOr<index::SearchResult> Search(const index::Query& query,
                                             const index::SearchContext& context,
                                             bool on_device = false) const;
  // Search of each of `queries` (contexts: one per query, or one for all), every segment
  // answering all of them in one call of its engine's SearchBatch (the GPU's batch path).
  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::Query*>& queries,
      const std::vector<index::SearchContext>& contexts, bool on_device = false) const;

  // The segment and its docID of a snapshot docID below docid_limit().
  std::pair<const SegmentView*, uint32_t> Locate(uint32_t docid) const;
  absl::string_view external_id(uint32_t docid) const override;
  std::vector<std::pair<absl::string_view, absl::string_view>> stored_fields(
      uint32_t docid) const override;
  // The live snapshot docID holding `external_id`, if any.
  std::optional<uint32_t> Find(absl::string_view external_id) const;
  // The collection statistics of `terms` (merged, in order) over the live documents.
  index::CollectionStatistics Statistics(const std::vector<index::QueryTerm>& terms) const;

 private:
  // A term's document frequency among a view's live documents (LiveDfs).
  uint64_t LiveDf(size_t view, const index::TermInfo& term) const;

  std::vector<SegmentView> segments_;
  uint64_t generation_ = 0;
  uint64_t num_docs_ = 0;
  uint64_t total_length_ = 0;
  float avg_doc_length_ = 1.0f;
  uint32_t docid_limit_ = 0;
};

// The number of `deleted` (sorted) that `list` holds, decoding only the blocks they fall in.
absl::StatusOr<uint32_t> CountDeletedPostings(const index::PostingListView& list,
                                              const index::BlockCodec& codec,
                                              const std::vector<uint32_t>& deleted);

}  // namespace tandem::live
