#include "gpu/batch/batch_query.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/batch/batch_format.h"
#include "gpu/batch/batch_ops.h"
#include "gpu/device/cuda_status.h"

namespace tandem::gpu {
namespace {

uint64_t Align16(uint64_t bytes) { return (bytes + 15) / 16 * 16; }

uint32_t OrRanges(uint32_t num_docs) { return (num_docs + kOrRangeDocs - 1) / kOrRangeDocs; }

// Which passes a query runs. AND: its AND. AND+OR: its AND, then the OR when the AND finds fewer
// than k (or at once when a term is absent). OR: the OR, after an AND over its terms whose k-th
// score is the OR's pruning threshold; an OR of one term is that AND.
struct Passes {
  bool run_and = false;
  OrPass or_pass = OrPass::kNever;
};
Passes PassesOf(const index::ResolvedQuery& q) {
  const bool several = q.terms.size() >= 2;
  switch (q.mode) {
    case index::QueryMode::kAnd:
      return {.run_and = q.runs_and(), .or_pass = OrPass::kNever};
    case index::QueryMode::kAndOr:
      if (q.runs_and()) return {.run_and = true, .or_pass = OrPass::kIfAndShort};
      return {.run_and = several, .or_pass = OrPass::kAlways};
    case index::QueryMode::kOr:
      break;
  }
  if (!several) return {.run_and = true, .or_pass = OrPass::kNever};
  return {.run_and = true, .or_pass = OrPass::kAlways};
}

uint32_t LeadPostings(const BatchItem& item) {
  uint32_t lead = UINT32_MAX;
  for (const auto& list : item.lists) lead = std::min(lead, list->num_postings);
  return lead == UINT32_MAX ? 0 : lead;
}

uint32_t Chunks(uint32_t postings) { return (postings + kAndChunk - 1) / kAndChunk; }

// The levels of one top-k reduction, from each query's level-0 groups to its answer.
struct Reduction {
  uint32_t levels = 0;                         // 0: not used
  std::vector<ReduceSpan> spans;               // (levels + 1) * num_queries
  std::vector<uint32_t> reduce_begin;          // levels * (num_queries + 1), as offsets
  uint64_t level_keys[2] = {0, 0};             // keys of the levels in each buffer, at most
  uint64_t spans_at = 0, reduce_begin_at = 0;  // where its arrays sit in the layout
};

Reduction PlanReduction(std::vector<uint32_t> groups, const std::vector<uint32_t>& fan_in,
                        const std::vector<uint32_t>& ks) {
  Reduction r;
  const size_t nq = groups.size();
  auto add_level = [&] {
    uint64_t keys = 0;
    for (size_t i = 0; i < nq; ++i) {
      r.spans.push_back({static_cast<uint32_t>(keys), groups[i]});
      keys += uint64_t{groups[i]} * ks[i];
    }
    return keys;
  };
  r.level_keys[0] = add_level();
  for (bool more = true; more;) {
    ++r.levels;
    more = false;
    for (size_t i = 0; i < nq; ++i) {
      groups[i] = NextGroups(groups[i], fan_in[i]);
      more = more || groups[i] > 1;
    }
    uint32_t blocks = 0;
    for (size_t i = 0; i < nq; ++i) {
      r.reduce_begin.push_back(blocks);
      blocks += groups[i];
    }
    r.reduce_begin.push_back(blocks);
    const uint64_t keys = add_level();
    if (more) r.level_keys[r.levels % 2] = std::max(r.level_keys[r.levels % 2], keys);
  }
  return r;
}

// Where a batch's parts sit: its layout (copied to the device as is) and, after it, its results;
// and the shape of its work.
struct Layout {
  uint32_t num_queries = 0, num_terms = 0;
  uint64_t queries = 0, and_begin = 0, or_begin = 0, cand_begin = 0, terms = 0;
  uint64_t layout_bytes = 0;
  uint64_t results = 0, result_bytes = 0;  // host: after the layout; device: likewise
  uint64_t and_blocks = 0, or_blocks = 0, cand_blocks = 0, out_keys = 0;
  std::vector<Passes> passes;
  std::vector<uint32_t> and_chunks, or_ranges, cand_chunks, fan_in, ks;
  Reduction and_reduction, or_reduction;
  uint64_t level_keys[2] = {0, 0};  // keys of the two reduction buffers
};

Layout LayoutOf(const std::vector<BatchItem>& items, uint32_t num_docs) {
  Layout l;
  const uint32_t nq = static_cast<uint32_t>(items.size());
  l.num_queries = nq;
  std::vector<uint32_t> and_groups(nq), or_groups(nq);
  for (uint32_t i = 0; i < nq; ++i) {
    const index::ResolvedQuery& q = *items[i].query;
    const Passes passes = PassesOf(q);
    l.passes.push_back(passes);
    l.num_terms += static_cast<uint32_t>(q.terms.size());
    l.and_chunks.push_back(passes.run_and ? Chunks(LeadPostings(items[i])) : 0);
    uint32_t ranges = 0, cands = 0;
    if (passes.or_pass != OrPass::kNever) {
      ranges = OrRanges(num_docs);
      for (const auto& list : items[i].lists) cands += Chunks(list->num_postings);
    }
    l.or_ranges.push_back(ranges);
    l.cand_chunks.push_back(cands);
    l.fan_in.push_back(std::max<uint32_t>(2, kReduceKeys / q.k));
    l.ks.push_back(q.k);
    l.and_blocks += l.and_chunks[i];
    l.or_blocks += ranges;
    l.cand_blocks += cands;
    l.out_keys += q.k;
    and_groups[i] = l.and_chunks[i];
    or_groups[i] = ranges + cands;
  }
  if (l.and_blocks > 0) l.and_reduction = PlanReduction(and_groups, l.fan_in, l.ks);
  if (l.or_blocks + l.cand_blocks > 0) l.or_reduction = PlanReduction(or_groups, l.fan_in, l.ks);
  for (int b = 0; b < 2; ++b) {
    l.level_keys[b] = std::max(l.and_reduction.level_keys[b], l.or_reduction.level_keys[b]);
  }
  uint64_t at = Align16(sizeof(BatchQuery) * nq);
  l.and_begin = at;
  at = Align16(at + sizeof(uint32_t) * (nq + 1));
  l.or_begin = at;
  at = Align16(at + sizeof(uint32_t) * (nq + 1));
  l.cand_begin = at;
  at = Align16(at + sizeof(uint32_t) * (nq + 1));
  l.terms = at;
  at = Align16(at + sizeof(BatchTerm) * l.num_terms);
  for (Reduction* r : {&l.and_reduction, &l.or_reduction}) {
    r->spans_at = at;
    at = Align16(at + sizeof(ReduceSpan) * r->spans.size());
    r->reduce_begin_at = at;
    at = Align16(at + sizeof(uint32_t) * r->reduce_begin.size());
  }
  l.layout_bytes = at;
  l.results = l.layout_bytes;
  l.result_bytes = Align16(ResultBytes(nq, l.out_keys));
  return l;
}

}  // namespace

bool FitsBatch(const index::ResolvedQuery& query) {
  return !query.empty() && query.terms.size() <= kMaxBatchTerms && query.k <= kMaxBatchK;
}

BatchFootprint FootprintOf(const std::vector<BatchItem>& items, uint32_t num_docs) {
  const Layout l = LayoutOf(items, num_docs);
  BatchFootprint f;
  f.host_bytes = l.layout_bytes + l.result_bytes;
  f.device_bytes = l.layout_bytes + l.result_bytes + Align16(sizeof(uint64_t) * l.level_keys[0]) +
                   Align16(sizeof(uint64_t) * l.level_keys[1]) +
                   Align16(sizeof(OrPlan) * l.num_queries) + 5 * ScratchArena::kAlignment;
  return f;
}

absl::Status RunBatch(const std::vector<BatchItem>& items, const float* norms, const uint32_t* live,
                      uint32_t num_docs, SearchRange range, QueryContext& context) {
  if (items.empty()) return absl::OkStatus();
  const Layout l = LayoutOf(items, num_docs);
  if (l.and_blocks > INT32_MAX || l.or_blocks > INT32_MAX || l.cand_blocks > INT32_MAX ||
      l.level_keys[0] > UINT32_MAX || l.and_reduction.levels > kMaxReduceLevels ||
      l.or_reduction.levels > kMaxReduceLevels) {
    return absl::ResourceExhaustedError("the batch has more work than one launch can hold");
  }
  if (l.layout_bytes + l.result_bytes > context.host_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the batch needs ", l.layout_bytes + l.result_bytes,
                     " bytes of pinned memory, its context has ", context.host_bytes));
  }
  // The layout, in pinned memory.
  char* host = reinterpret_cast<char*>(context.host_keys);
  auto* queries = reinterpret_cast<BatchQuery*>(host);
  auto* and_begin = reinterpret_cast<uint32_t*>(host + l.and_begin);
  auto* or_begin = reinterpret_cast<uint32_t*>(host + l.or_begin);
  auto* cand_begin = reinterpret_cast<uint32_t*>(host + l.cand_begin);
  auto* terms = reinterpret_cast<BatchTerm*>(host + l.terms);
  uint32_t term = 0, and_next = 0, or_next = 0, cand_next = 0, out_next = 0;
  for (uint32_t i = 0; i < l.num_queries; ++i) {
    const BatchItem& item = items[i];
    const index::ResolvedQuery& rq = *item.query;
    if (item.lists.size() != rq.terms.size()) {
      return absl::InternalError("a batch query's lists do not match its terms");
    }
    BatchQuery& bq = queries[i];
    bq = BatchQuery{};
    bq.first_term = term;
    bq.num_terms = static_cast<uint32_t>(rq.terms.size());
    bq.k = rq.k;
    bq.run_and = l.passes[i].run_and ? 1 : 0;
    bq.or_pass = l.passes[i].or_pass;
    bq.and_chunks = l.and_chunks[i];
    bq.or_ranges = l.or_ranges[i];
    bq.cand_chunks = l.cand_chunks[i];
    bq.fan_in = l.fan_in[i];
    bq.out_begin = out_next;
    uint32_t by_length[kMaxBatchTerms], by_bound[kMaxBatchTerms];
    for (uint32_t s = 0; s < bq.num_terms; ++s) {
      const DeviceList& list = *item.lists[s];
      if (!list.search.present()) {
        return absl::FailedPreconditionError("a list has no search form: batches need them");
      }
      const index::ResolvedTerm& t = rq.terms[s];
      BatchTerm& bt = terms[term + s];
      bt = BatchTerm{};
      bt.form = list.search;
      bt.freqs = list.freqs.desc;
      bt.freq_image = list.freqs.image;
      bt.weighted_idf = t.weighted_idf;
      // As the CPU engine's MaxScore bounds a term: never above weighted_idf.
      bt.bound = t.has_stored_bound
                     ? std::min(t.weighted_idf, t.weighted_idf * (t.bound_ratio * kBoundMargin))
                     : t.weighted_idf;
      by_length[s] = s;
      by_bound[s] = s;
    }
    std::stable_sort(by_length, by_length + bq.num_terms, [&](uint32_t a, uint32_t b) {
      return item.lists[a]->num_postings < item.lists[b]->num_postings;
    });
    std::stable_sort(by_bound, by_bound + bq.num_terms, [&](uint32_t a, uint32_t b) {
      return terms[term + a].bound < terms[term + b].bound;
    });
    float sum = 0.0f;
    for (uint32_t s = 0; s < bq.num_terms; ++s) {
      bq.order[s] = static_cast<uint8_t>(by_length[s]);
      bq.by_bound[s] = static_cast<uint8_t>(by_bound[s]);
      sum += terms[term + by_bound[s]].bound;
      bq.bound_sum[s] = sum * kBoundMargin;
    }
    and_begin[i] = and_next;
    and_next += bq.and_chunks;
    or_begin[i] = or_next;
    or_next += bq.or_ranges;
    cand_begin[i] = cand_next;
    cand_next += bq.cand_chunks;
    out_next += bq.k;
    term += bq.num_terms;
  }
  and_begin[l.num_queries] = and_next;
  or_begin[l.num_queries] = or_next;
  cand_begin[l.num_queries] = cand_next;
  for (const Reduction* r : {&l.and_reduction, &l.or_reduction}) {
    std::memcpy(host + r->spans_at, r->spans.data(), sizeof(ReduceSpan) * r->spans.size());
    std::memcpy(host + r->reduce_begin_at, r->reduce_begin.data(),
                sizeof(uint32_t) * r->reduce_begin.size());
  }

  // Device memory: the layout, the results, the reductions' two buffers and the OR plans.
  ScratchArena& arena = context.arena;
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(char* device, arena.Take<char>(l.layout_bytes + l.result_bytes));
  BatchBuffers buffers{
      .levels = {nullptr, nullptr}, .plans = nullptr, .results = device + l.results};
  for (int b = 0; b < 2; ++b) {
    if (l.level_keys[b] > 0) {
      TANDEM_ASSIGN_OR_RETURN(buffers.levels[b], arena.Take<uint64_t>(l.level_keys[b]));
    }
  }
  TANDEM_ASSIGN_OR_RETURN(buffers.plans, arena.Take<OrPlan>(l.num_queries));
  cudaStream_t stream = context.stream;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device, host, l.layout_bytes, cudaMemcpyHostToDevice, stream));
  DeviceBatch batch;
  batch.queries = reinterpret_cast<const BatchQuery*>(device);
  batch.and_begin = reinterpret_cast<const uint32_t*>(device + l.and_begin);
  batch.or_begin = reinterpret_cast<const uint32_t*>(device + l.or_begin);
  batch.cand_begin = reinterpret_cast<const uint32_t*>(device + l.cand_begin);
  batch.terms = reinterpret_cast<const BatchTerm*>(device + l.terms);
  batch.num_queries = l.num_queries;
  batch.and_blocks = static_cast<uint32_t>(l.and_blocks);
  batch.or_blocks = static_cast<uint32_t>(l.or_blocks);
  batch.cand_blocks = static_cast<uint32_t>(l.cand_blocks);
  auto device_reduction = [&](const Reduction& r) {
    DeviceReduction d;
    d.spans = reinterpret_cast<const ReduceSpan*>(device + r.spans_at);
    d.reduce_begin = reinterpret_cast<const uint32_t*>(device + r.reduce_begin_at);
    d.levels = r.levels;
    for (uint32_t level = 0; level < r.levels; ++level) {
      d.reduce_blocks[level] =
          r.reduce_begin[uint64_t{level} * (l.num_queries + 1) + l.num_queries];
    }
    return d;
  };
  batch.and_reduction = device_reduction(l.and_reduction);
  batch.or_reduction = device_reduction(l.or_reduction);
  TANDEM_RETURN_IF_ERROR(LaunchBatch(batch, buffers, norms, live, num_docs, range, stream));
  char* results = host + l.results;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(results, device + l.results,
                                              ResultBytes(l.num_queries, l.out_keys),
                                              cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  arena.Rollback(mark);

  // The answers: each query's keys, sorted into rank order.
  const auto* and_count = reinterpret_cast<const uint32_t*>(results);
  const uint32_t* out_count = and_count + l.num_queries;
  const uint32_t* executed = out_count + l.num_queries;
  const auto* out = reinterpret_cast<const uint64_t*>(results + ResultKeysOffset(l.num_queries));
  for (uint32_t i = 0; i < l.num_queries; ++i) {
    const BatchQuery& bq = queries[i];
    const index::ResolvedQuery& rq = *items[i].query;
    index::SearchResult& result = *items[i].result;
    result.hits.clear();
    if (executed[i] > 1) continue;  // no pass ran: nothing matches
    std::vector<uint64_t> keys(out + bq.out_begin, out + bq.out_begin + out_count[i]);
    std::sort(keys.begin(), keys.end());
    result.hits.reserve(keys.size());
    for (uint64_t key : keys) {
      const uint32_t bits = ~static_cast<uint32_t>(key >> 32);
      float score;
      std::memcpy(&score, &bits, sizeof(score));
      result.hits.push_back({static_cast<uint32_t>(key), score});
    }
    // An OR query's AND only gave its OR a threshold (or, of one term, is its OR).
    const bool answered_by_or = executed[i] == 1 || rq.mode == index::QueryMode::kOr;
    result.stats.executed_mode = answered_by_or ? index::QueryMode::kOr : index::QueryMode::kAnd;
    if (bq.run_and) {
      result.stats.postings_decoded += LeadPostings(items[i]);
      if (!answered_by_or) result.stats.documents_scored += and_count[i];
    }
    if (executed[i] == 1) {
      for (const auto& list : items[i].lists) result.stats.postings_decoded += list->num_postings;
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::gpu
