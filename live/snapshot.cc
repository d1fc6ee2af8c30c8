#include "live/snapshot.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "filter/filter.h"
#include "index/prepared_query.h"
#include "index/resolved_query.h"

namespace tandem::live {

absl::StatusOr<std::shared_ptr<Segment>> Segment::Open(const std::string& dir,
                                                       const std::string& name,
                                                       const cpu::DaatEngineOptions& engine,
                                                       std::shared_ptr<const index::Index> opened,
                                                       const DeviceEngines& device) {
  std::shared_ptr<Segment> segment(new Segment());
  segment->name_ = name;
  if (opened != nullptr) {
    segment->index_ = std::move(opened);
  } else {
    TANDEM_ASSIGN_OR_RETURN(segment->index_, index::Index::Open(dir));
  }
  if (segment->index_->shard() != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment '", dir, "' is a shard of a collection; a live index takes whole indexes"));
  }
  TANDEM_ASSIGN_OR_RETURN(segment->engine_, cpu::DaatEngine::Create(*segment->index_, engine));
  if (name == "." && device.opened != nullptr && &device.opened->index() == segment->index_.get()) {
    segment->device_engine_ = device.opened;
  } else if (device.create != nullptr && segment->num_docs() >= device.min_docs) {
    absl::StatusOr<std::unique_ptr<index::Engine>> created = device.create(*segment->index_);
    if (created.ok()) {
      segment->device_owned_ = *std::move(created);
      segment->device_engine_ = segment->device_owned_.get();
    } else {
      segment->device_error_ = created.status();
    }
  }
  return segment;
}

std::vector<uint32_t> Segment::Find(absl::string_view external_id) const {
  std::call_once(ids_built_, [this] {
    docids_by_id_.resize(num_docs());
    std::iota(docids_by_id_.begin(), docids_by_id_.end(), 0u);
    std::stable_sort(docids_by_id_.begin(), docids_by_id_.end(), [this](uint32_t a, uint32_t b) {
      return index_->external_id(a) < index_->external_id(b);
    });
  });
  // Equal ids sort by docID (a stable sort of docIDs in order), so the run is ascending.
  auto it = std::lower_bound(
      docids_by_id_.begin(), docids_by_id_.end(), external_id,
      [this](uint32_t docid, absl::string_view id) { return index_->external_id(docid) < id; });
  std::vector<uint32_t> found;
  for (; it != docids_by_id_.end() && index_->external_id(*it) == external_id; ++it) {
    found.push_back(*it);
  }
  return found;
}

LiveDfs::LiveDfs(std::shared_ptr<LiveDfs> before, std::vector<uint32_t> added)
    : before_(std::move(before)), added_(std::move(added)) {
  // One predecessor is kept: the one before it is let go (its counts now start from scratch).
  if (before_ != nullptr) {
    std::lock_guard<std::mutex> lock(before_->mu_);
    before_->before_ = nullptr;
  }
}

std::optional<uint32_t> LiveDfs::Get(uint64_t ordinal) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ordinal);
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

void LiveDfs::Put(uint64_t ordinal, uint32_t live) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.emplace(ordinal, live);
}

std::shared_ptr<LiveDfs> LiveDfs::before() const {
  std::lock_guard<std::mutex> lock(mu_);
  return before_;
}

absl::StatusOr<SegmentView> SegmentView::Make(std::shared_ptr<const Segment> segment,
                                              std::shared_ptr<const std::vector<uint32_t>> deleted,
                                              const SegmentView* before) {
  SegmentView view;
  const index::Index& index = segment->index();
  const uint32_t n = index.num_docs();
  if (deleted == nullptr) deleted = std::make_shared<const std::vector<uint32_t>>();
  for (size_t i = 0; i < deleted->size(); ++i) {
    if ((*deleted)[i] >= n || (i > 0 && (*deleted)[i] <= (*deleted)[i - 1])) {
      return absl::DataLossError(absl::StrCat("segment '", segment->name(), "': deleted docID ",
                                              (*deleted)[i], " is out of order or past its ", n,
                                              " documents"));
    }
  }
  view.live_docs = n - static_cast<uint32_t>(deleted->size());
  view.live_length = index.stats().total_doc_length;
  for (uint32_t d : *deleted) view.live_length -= index.doc_length(d);
  if (!deleted->empty()) {
    // In the codec of the segment's attribute bitmaps, which filters AND it with.
    const filter::BitmapCodec codec =
        index.attributes() != nullptr ? index.attributes()->codec() : filter::BitmapCodec::kWah;
    TANDEM_ASSIGN_OR_RETURN(filter::Bitmap gone, filter::FromRows(codec, n, *deleted));
    view.live = std::make_shared<const filter::Bitmap>(filter::Not(gone));
    std::shared_ptr<LiveDfs> earlier;
    std::vector<uint32_t> added;
    if (before != nullptr && before->segment == segment && before->dfs != nullptr &&
        std::includes(deleted->begin(), deleted->end(), before->deleted->begin(),
                      before->deleted->end())) {
      earlier = before->dfs;
      std::set_difference(deleted->begin(), deleted->end(), before->deleted->begin(),
                          before->deleted->end(), std::back_inserter(added));
    }
    view.dfs = std::make_shared<LiveDfs>(std::move(earlier), std::move(added));
  }
  view.segment = std::move(segment);
  view.deleted = std::move(deleted);
  return view;
}

bool SegmentView::is_deleted(uint32_t docid) const {
  return std::binary_search(deleted->begin(), deleted->end(), docid);
}

Snapshot::Snapshot(std::vector<SegmentView> views, uint64_t generation)
    : segments_(std::move(views)), generation_(generation) {
  uint32_t base = 0;
  for (SegmentView& v : segments_) {
    v.base = base;
    base += v.segment->num_docs();
    num_docs_ += v.live_docs;
    total_length_ += v.live_length;
  }
  docid_limit_ = base;
  // As IndexWriter::FinishDocuments computes a fresh build's average, to the same float.
  avg_doc_length_ = num_docs_ == 0 || total_length_ == 0
                        ? 1.0f
                        : static_cast<float>(static_cast<double>(total_length_) / num_docs_);
}

absl::StatusOr<uint32_t> CountDeletedPostings(const index::PostingListView& list,
                                              const index::BlockCodec& codec,
                                              const std::vector<uint32_t>& deleted) {
  uint32_t count = 0;
  std::vector<uint32_t> docids(index::kBlockSize);
  uint32_t decoded_block = UINT32_MAX;
  uint32_t decoded_size = 0;
  const uint32_t* last = list.last_docids();
  for (uint32_t d : deleted) {
    const uint32_t block =
        static_cast<uint32_t>(std::lower_bound(last, last + list.num_blocks(), d) - last);
    if (block == list.num_blocks()) break;  // past the list's last docID, as are the rest
    if (block != decoded_block) {
      TANDEM_RETURN_IF_ERROR(list.DecodeDocids(codec, block, docids.data()));
      decoded_block = block;
      decoded_size = list.block_postings(block);
    }
    count += std::binary_search(docids.begin(), docids.begin() + decoded_size, d) ? 1 : 0;
  }
  return count;
}

uint64_t Snapshot::LiveDf(size_t view, const index::TermInfo& term) const {
  const SegmentView& v = segments_[view];
  if (v.deleted->empty() || v.dfs == nullptr) return term.df;
  if (std::optional<uint32_t> known = v.dfs->Get(term.ordinal)) return *known;
  const index::Index& index = v.segment->index();
  absl::StatusOr<index::PostingListView> list = index.postings(term);
  // A damaged list counts whole here; the engine's search of it then fails with DATA_LOSS.
  uint32_t live = term.df;
  if (list.ok()) {
    // From the predecessor's count when it has one: only the deletes added since are looked up.
    const std::shared_ptr<LiveDfs> before = v.dfs->before();
    const std::optional<uint32_t> earlier =
        before != nullptr ? before->Get(term.ordinal) : std::nullopt;
    absl::StatusOr<uint32_t> gone =
        CountDeletedPostings(*list, index.codec(), earlier ? v.dfs->added() : *v.deleted);
    const uint32_t from = earlier ? *earlier : term.df;
    live = from - std::min(from, gone.ok() ? *gone : 0u);
  }
  v.dfs->Put(term.ordinal, live);
  return live;
}

index::CollectionStatistics Snapshot::Statistics(const std::vector<index::QueryTerm>& terms) const {
  index::CollectionStatistics stats;
  stats.num_docs = num_docs_;
  stats.avg_doc_length = avg_doc_length_;
  stats.dfs.assign(terms.size(), 0);
  for (size_t v = 0; v < segments_.size(); ++v) {
    if (segments_[v].live_docs == 0) continue;
    for (size_t i = 0; i < terms.size(); ++i) {
      if (std::optional<index::TermInfo> t = segments_[v].segment->index().Lookup(terms[i].term)) {
        stats.dfs[i] += LiveDf(v, *t);
      }
    }
  }
  return stats;
}

namespace {

// The documents of `view` that `query`'s filter allows, ANDed with its live documents: the filter
// expression evaluated against the segment's attributes, or the rows of the filter bitmap (over a
// whole snapshot) that fall in the segment. Null when nothing restricts the segment.
absl::StatusOr<std::shared_ptr<const filter::Bitmap>> SegmentFilter(const SegmentView& view,
                                                                    const index::Query& query) {
  if (query.filter_expression != nullptr) {
    const filter::AttributeIndex* attributes = view.segment->index().attributes();
    if (attributes == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter: segment '", view.segment->name(), "' stores no attributes"));
    }
    absl::StatusOr<filter::Bitmap> allowed =
        filter::EvaluateFilterOnPart(*query.filter_expression, *attributes);
    if (!allowed.ok()) {
      return absl::Status(allowed.status().code(), absl::StrCat("segment '", view.segment->name(),
                                                                "': ", allowed.status().message()));
    }
    if (view.live != nullptr) {
      TANDEM_ASSIGN_OR_RETURN(*allowed, filter::And(*allowed, *view.live));
    }
    return std::make_shared<const filter::Bitmap>(*std::move(allowed));
  }
  const filter::Bitmap* filter = query.filter.get();
  if (filter == nullptr) return view.live;
  const uint32_t n = view.segment->num_docs();
  std::vector<uint32_t> rows;
  filter->view().ForEachRow([&](uint32_t row) {
    if (row >= view.base && row - view.base < n) rows.push_back(row - view.base);
  });
  TANDEM_ASSIGN_OR_RETURN(filter::Bitmap part, filter::FromRows(filter->codec(), n, rows));
  if (view.live != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(part, filter::And(part, *view.live));
  }
  return std::make_shared<const filter::Bitmap>(std::move(part));
}

// INVALID_ARGUMENT for a value of a term or IN that no segment's attributes hold, as a fresh
// build over the documents would refuse it (each segment alone treats a value it lacks as
// matching nothing there: filter::EvaluateFilterOnPart).
absl::Status CheckValuesKnown(const filter::FilterNode& node,
                              const std::vector<SegmentView>& views) {
  for (const filter::FilterNode& child : node.children) {
    TANDEM_RETURN_IF_ERROR(CheckValuesKnown(child, views));
  }
  if (node.kind != filter::FilterNode::Kind::kTerm && node.kind != filter::FilterNode::Kind::kIn) {
    return absl::OkStatus();
  }
  for (const std::string& value : node.values) {
    bool known = false;
    for (const SegmentView& v : views) {
      const filter::AttributeIndex* attributes = v.segment->index().attributes();
      const filter::AttributeField* field =
          attributes != nullptr ? attributes->Find(node.field) : nullptr;
      if (field == nullptr) continue;
      if (field->kind == filter::AttributeKind::kKeyword) {
        known = field->ValueId(value).has_value();
      } else {
        const std::optional<int64_t> n = filter::ParseFilterInteger(value);
        known = !n || field->BucketOf(*n).has_value();  // a bad integer fails in the evaluation
      }
      if (known) break;
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("filter: unknown value \"", value,
                                                     "\" of field \"", node.field,
                                                     "\": no document has it"));
    }
  }
  return absl::OkStatus();
}

void AddStats(const index::QueryStats& from, index::QueryStats& to) {
  to.postings_decoded += from.postings_decoded;
  to.blocks_decoded += from.blocks_decoded;
  to.documents_scored += from.documents_scored;
  to.block_max_skips += from.block_max_skips;
}

}  // namespace

absl::StatusOr<index::SearchResult> Snapshot::Search(const index::Query& query,
                                                     const index::SearchContext& context,
                                                     bool on_device) const {
  return std::move(SearchBatch({&query}, {context}, on_device)[0]);
}

std::vector<absl::StatusOr<index::SearchResult>> Snapshot::SearchBatch(
    const std::vector<const index::Query*>& queries,
    const std::vector<index::SearchContext>& contexts, bool on_device) const {
  const size_t n = queries.size();
  std::vector<absl::StatusOr<index::SearchResult>> results(n, index::SearchResult{});
  if (absl::Status fit = index::CheckBatchContexts(n, contexts.size()); !fit.ok()) {
    for (auto& r : results) r = fit;
    return results;
  }
  auto context_of = [&](size_t i) -> const index::SearchContext& {
    return contexts.size() == 1 ? contexts[0] : contexts[i];
  };
  // One segment without deletes is its own collection: it scores with its stored norms, and its
  // engine alone decides whether an AND pass can match.
  const bool alone = segments_.size() == 1 && segments_[0].deleted->empty();
  struct Planned {
    index::Query merged;
    // Statistics the query brings (a broker's over a sharded collection), else the snapshot's.
    bool own_statistics = false;
    index::CollectionStatistics stats;
    bool and_can_match = false;
    std::vector<index::Hit> hits;
  };
  std::vector<Planned> plans(n);
  std::vector<size_t> and_pass, or_pass;
  for (size_t i = 0; i < n; ++i) {
    Planned& p = plans[i];
    p.merged = *queries[i];
    p.merged.terms = index::MergeRepeatedTerms(queries[i]->terms);
    absl::Status valid = index::ValidateQuery(p.merged);
    // An expression is evaluated per segment; a bitmap must number the snapshot's documents.
    if (p.merged.filter_expression != nullptr) p.merged.filter = nullptr;
    if (valid.ok()) valid = index::ValidateQueryFilter(p.merged, docid_limit_);
    if (valid.ok() && p.merged.filter_expression != nullptr) {
      valid = CheckValuesKnown(*p.merged.filter_expression, segments_);
    }
    if (!valid.ok()) {
      results[i] = valid;
      continue;
    }
    p.own_statistics = alone && queries[i]->collection == nullptr;
    if (queries[i]->collection != nullptr) {
      p.stats = *queries[i]->collection;
    } else if (!p.own_statistics) {
      p.stats = Statistics(p.merged.terms);
    }
    results[i]->stats.executed_mode =
        p.merged.mode == index::QueryMode::kAnd ? index::QueryMode::kAnd : index::QueryMode::kOr;
    // An AND pass over the whole collection finds nothing when a term has no live document; each
    // segment's pass then finds nothing either, so it is skipped.
    p.and_can_match = !p.merged.terms.empty() &&
                      (p.own_statistics || std::all_of(p.stats.dfs.begin(), p.stats.dfs.end(),
                                                       [](uint64_t df) { return df > 0; }));
    if (p.merged.mode != index::QueryMode::kOr && p.and_can_match) {
      and_pass.push_back(i);
    } else if (p.merged.mode != index::QueryMode::kAnd && !p.merged.terms.empty()) {
      or_pass.push_back(i);
    }
  }

  // One pass in `mode` of `which` queries over every segment, each segment answering all of them
  // at once (its engine's SearchBatch: the GPU's batch path), merged into each query's top k.
  // The queries of one pass as one segment's engine takes them.
  struct SegmentWork {
    const SegmentView* view = nullptr;
    const index::Engine* engine = nullptr;
    std::vector<index::PreparedQuery> parts;
    std::vector<size_t> part_query;
    std::vector<index::SearchContext> part_contexts;
    std::vector<absl::StatusOr<index::SearchResult>> answers;
    void Run() {
      // One query alone goes through Search: a batching engine's buffer then gathers it with the
      // queries of other threads.
      if (parts.size() == 1) {
        answers.push_back(engine->Search(parts[0], part_contexts[0]));
        return;
      }
      std::vector<const index::PreparedQuery*> pointers;
      for (const index::PreparedQuery& part : parts) pointers.push_back(&part);
      answers = engine->SearchBatch(pointers, part_contexts);
    }
  };
  auto pass = [&](const std::vector<size_t>& which, index::QueryMode mode) {
    for (size_t i : which) plans[i].hits.clear();
    std::vector<SegmentWork> work;
    for (const SegmentView& v : segments_) {
      if (v.live_docs == 0) continue;
      SegmentWork& w = work.emplace_back();
      w.view = &v;
      w.engine = on_device && v.segment->device_engine() != nullptr ? v.segment->device_engine()
                                                                    : &v.segment->engine();
      w.parts.reserve(which.size());
      for (size_t i : which) {
        if (!results[i].ok()) continue;
        Planned& p = plans[i];
        index::Query part = p.merged;
        part.mode = mode;
        part.filter_expression = nullptr;
        absl::StatusOr<std::shared_ptr<const filter::Bitmap>> allowed = SegmentFilter(v, p.merged);
        if (!allowed.ok()) {
          results[i] = allowed.status();
          continue;
        }
        part.filter = *std::move(allowed);
        absl::StatusOr<index::PreparedQuery> prepared = index::PreparedQuery::Prepare(
            v.segment->index(), std::move(part), p.own_statistics ? nullptr : &p.stats);
        if (!prepared.ok()) {
          results[i] = prepared.status();
          continue;
        }
        w.parts.push_back(*std::move(prepared));
        w.part_query.push_back(i);
        w.part_contexts.push_back(context_of(i));
      }
    }
    // For a batch, the device's segments on a thread of their own while this one searches the
    // CPU's: the device's wait overlaps the CPU's work on the small segments. A single query's
    // pass is too short to pay for starting a thread.
    std::vector<SegmentWork*> device, host;
    for (SegmentWork& w : work) {
      if (w.parts.empty()) continue;
      (w.engine == &w.view->segment->engine() ? host : device).push_back(&w);
    }
    std::thread device_thread;
    if (which.size() > 1 && !device.empty() && !host.empty()) {
      device_thread = std::thread([&device] {
        for (SegmentWork* w : device) w->Run();
      });
    } else {
      for (SegmentWork* w : device) w->Run();
    }
    for (SegmentWork* w : host) w->Run();
    if (device_thread.joinable()) device_thread.join();
    for (SegmentWork& w : work) {
      for (size_t j = 0; j < w.answers.size(); ++j) {
        const size_t i = w.part_query[j];
        absl::StatusOr<index::SearchResult>& r = w.answers[j];
        if (!r.ok()) {
          results[i] = absl::Status(
              r.status().code(),
              absl::StrCat("segment '", w.view->segment->name(), "': ", r.status().message()));
          continue;
        }
        AddStats(r->stats, results[i]->stats);
        for (const index::Hit& h : r->hits) {
          plans[i].hits.push_back({h.docid + w.view->base, h.score});
        }
      }
    }
    for (size_t i : which) {
      if (!results[i].ok()) continue;
      std::vector<index::Hit>& hits = plans[i].hits;
      std::sort(hits.begin(), hits.end(), index::RanksBefore);
      if (hits.size() > plans[i].merged.k) hits.resize(plans[i].merged.k);
      results[i]->hits = std::move(hits);
      results[i]->stats.executed_mode = mode;
    }
  };

  if (!and_pass.empty()) pass(and_pass, index::QueryMode::kAnd);
  // AND+OR queries whose AND found fewer than k go on to an OR pass.
  for (size_t i : and_pass) {
    if (results[i].ok() && plans[i].merged.mode == index::QueryMode::kAndOr &&
        results[i]->hits.size() < plans[i].merged.k) {
      or_pass.push_back(i);
    }
  }
  if (!or_pass.empty()) pass(or_pass, index::QueryMode::kOr);
  return results;
}

std::pair<const SegmentView*, uint32_t> Snapshot::Locate(uint32_t docid) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), docid,
                             [](uint32_t d, const SegmentView& v) { return d < v.base; });
  const SegmentView& v = *std::prev(it);
  return {&v, docid - v.base};
}

absl::string_view Snapshot::external_id(uint32_t docid) const {
  auto [view, local] = Locate(docid);
  return view->segment->index().external_id(local);
}

std::vector<std::pair<absl::string_view, absl::string_view>> Snapshot::stored_fields(
    uint32_t docid) const {
  auto [view, local] = Locate(docid);
  return view->segment->index().stored_fields(local);
}

std::optional<uint32_t> Snapshot::Find(absl::string_view external_id) const {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    for (uint32_t d : it->segment->Find(external_id)) {
      if (!it->is_deleted(d)) return it->base + d;
    }
  }
  return std::nullopt;
}

}  // namespace tandem::live
