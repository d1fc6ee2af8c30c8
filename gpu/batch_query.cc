#include "gpu/batch_query.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/batch_format.h"
#include "gpu/batch_ops.h"
#include "gpu/cuda_status.h"

namespace tandem::gpu {
namespace {

uint64_t Align16(uint64_t bytes) { return (bytes + 15) / 16 * 16; }

uint32_t OrRanges(uint32_t num_docs) { return (num_docs + kOrRangeDocs - 1) / kOrRangeDocs; }

OrPass OrPassOf(const index::ResolvedQuery& q) {
  if (q.mode == index::QueryMode::kAnd) return OrPass::kNever;
  if (q.mode == index::QueryMode::kOr || !q.runs_and()) return OrPass::kAlways;
  return OrPass::kIfAndShort;
}

uint32_t LeadPostings(const BatchItem& item) {
  uint32_t lead = UINT32_MAX;
  for (const auto& list : item.lists) lead = std::min(lead, list->num_postings);
  return lead == UINT32_MAX ? 0 : lead;
}

// Where a batch's parts sit: its layout (copied to the device as is) and, after it, its results;
// and the shape of its work, per query and level of the reduction.
struct Layout {
  uint32_t num_queries = 0, num_terms = 0, levels = 1;
  uint64_t queries = 0, and_begin = 0, or_begin = 0, terms = 0, spans = 0, reduce_begin = 0;
  uint64_t layout_bytes = 0;
  uint64_t results = 0, result_bytes = 0;  // host: after the layout; device: likewise
  uint64_t and_blocks = 0, or_blocks = 0, out_keys = 0;
  uint64_t level_keys[2] = {0, 0};  // keys of the two reduction buffers
  std::vector<uint32_t> and_chunks, or_ranges, fan_in;
  std::vector<ReduceSpan> span;         // (levels + 1) * num_queries
  std::vector<uint32_t> reduce_blocks;  // levels * (num_queries + 1), as offsets
};

Layout LayoutOf(const std::vector<BatchItem>& items, uint32_t num_docs) {
  Layout l;
  const uint32_t nq = static_cast<uint32_t>(items.size());
  l.num_queries = nq;
  std::vector<uint32_t> groups(nq);
  for (uint32_t i = 0; i < nq; ++i) {
    const index::ResolvedQuery& q = *items[i].query;
    l.num_terms += static_cast<uint32_t>(q.terms.size());
    const uint32_t lead = LeadPostings(items[i]);
    l.and_chunks.push_back(q.runs_and() ? (lead + kAndChunk - 1) / kAndChunk : 0);
    l.or_ranges.push_back(OrPassOf(q) != OrPass::kNever ? OrRanges(num_docs) : 0);
    l.fan_in.push_back(std::max<uint32_t>(2, kReduceKeys / q.k));
    l.and_blocks += l.and_chunks[i];
    l.or_blocks += l.or_ranges[i];
    l.out_keys += q.k;
    groups[i] = l.and_chunks[i] + l.or_ranges[i];
  }
  // Level 0, then a level more until every query has one group.
  auto add_level = [&] {
    uint64_t keys = 0;
    for (uint32_t i = 0; i < nq; ++i) {
      const uint32_t k = items[i].query->k;
      l.span.push_back({static_cast<uint32_t>(keys), groups[i]});
      keys += uint64_t{groups[i]} * k;
    }
    return keys;
  };
  l.level_keys[0] = add_level();
  uint32_t level = 0;
  for (bool more = true; more;) {
    ++level;
    more = false;
    for (uint32_t i = 0; i < nq; ++i) {
      groups[i] = NextGroups(groups[i], l.fan_in[i]);
      more = more || groups[i] > 1;
    }
    uint32_t blocks = 0;
    for (uint32_t i = 0; i < nq; ++i) {
      l.reduce_blocks.push_back(blocks);
      blocks += groups[i];
    }
    l.reduce_blocks.push_back(blocks);
    const uint64_t keys = add_level();
    if (more) l.level_keys[level % 2] = std::max(l.level_keys[level % 2], keys);
  }
  l.levels = level;
  l.queries = 0;
  l.and_begin = Align16(l.queries + sizeof(BatchQuery) * nq);
  l.or_begin = Align16(l.and_begin + sizeof(uint32_t) * (nq + 1));
  l.terms = Align16(l.or_begin + sizeof(uint32_t) * (nq + 1));
  l.spans = Align16(l.terms + sizeof(BatchTerm) * l.num_terms);
  l.reduce_begin = Align16(l.spans + sizeof(ReduceSpan) * l.span.size());
  l.layout_bytes = Align16(l.reduce_begin + sizeof(uint32_t) * l.reduce_blocks.size());
  l.results = l.layout_bytes;
  l.result_bytes = Align16(ResultBytes(nq, l.out_keys));
  return l;
}

}  // namespace

bool FitsBatch(const index::ResolvedQuery& query) {
  return !query.empty() && query.terms.size() <= kMaxBatchTerms && query.k <= kMaxBatchK &&
         query.default_bm25;
}

BatchFootprint FootprintOf(const std::vector<BatchItem>& items, uint32_t num_docs) {
  const Layout l = LayoutOf(items, num_docs);
  BatchFootprint f;
  f.host_bytes = l.layout_bytes + l.result_bytes;
  f.device_bytes = l.layout_bytes + l.result_bytes + Align16(sizeof(uint64_t) * l.level_keys[0]) +
                   Align16(sizeof(uint64_t) * l.level_keys[1]) + 4 * ScratchArena::kAlignment;
  return f;
}

absl::Status RunBatch(const std::vector<BatchItem>& items, const float* norms, uint32_t num_docs,
                      SearchRange range, QueryContext& context) {
  if (items.empty()) return absl::OkStatus();
  const Layout l = LayoutOf(items, num_docs);
  if (l.and_blocks > INT32_MAX || l.or_blocks > INT32_MAX || l.level_keys[0] > UINT32_MAX ||
      l.levels > kMaxReduceLevels) {
    return absl::ResourceExhaustedError("the batch has more work than one launch can hold");
  }
  if (l.layout_bytes + l.result_bytes > context.host_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the batch needs ", l.layout_bytes + l.result_bytes,
                     " bytes of pinned memory, its context has ", context.host_bytes));
  }
  // The layout, in pinned memory.
  char* host = reinterpret_cast<char*>(context.host_keys);
  auto* queries = reinterpret_cast<BatchQuery*>(host + l.queries);
  auto* and_begin = reinterpret_cast<uint32_t*>(host + l.and_begin);
  auto* or_begin = reinterpret_cast<uint32_t*>(host + l.or_begin);
  auto* terms = reinterpret_cast<BatchTerm*>(host + l.terms);
  uint32_t term = 0, and_next = 0, or_next = 0;
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
    bq.run_and = rq.runs_and() ? 1 : 0;
    bq.or_pass = OrPassOf(rq);
    bq.and_chunks = l.and_chunks[i];
    bq.or_ranges = l.or_ranges[i];
    bq.fan_in = l.fan_in[i];
    uint32_t slots[kMaxBatchTerms];
    for (uint32_t s = 0; s < bq.num_terms; ++s) {
      const DeviceList& list = *item.lists[s];
      if (list.search.docids == nullptr) {
        return absl::FailedPreconditionError("a list has no search form: batches need them");
      }
      BatchTerm& bt = terms[term + s];
      bt = BatchTerm{};
      bt.form = list.search;
      bt.freqs = list.freqs.desc;
      bt.freq_image = list.freqs.image;
      bt.weighted_idf = rq.terms[s].weighted_idf;
      slots[s] = s;
    }
    std::stable_sort(slots, slots + bq.num_terms, [&](uint32_t a, uint32_t b) {
      return item.lists[a]->num_postings < item.lists[b]->num_postings;
    });
    for (uint32_t s = 0; s < bq.num_terms; ++s) bq.order[s] = static_cast<uint8_t>(slots[s]);
    and_begin[i] = and_next;
    and_next += bq.and_chunks;
    or_begin[i] = or_next;
    or_next += bq.or_ranges;
    term += bq.num_terms;
  }
  and_begin[l.num_queries] = and_next;
  or_begin[l.num_queries] = or_next;
  std::memcpy(host + l.spans, l.span.data(), sizeof(ReduceSpan) * l.span.size());
  std::memcpy(host + l.reduce_begin, l.reduce_blocks.data(),
              sizeof(uint32_t) * l.reduce_blocks.size());

  // Device memory: the layout, the results and the reduction's two buffers.
  ScratchArena& arena = context.arena;
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(char* device, arena.Take<char>(l.layout_bytes + l.result_bytes));
  BatchBuffers buffers{.levels = {nullptr, nullptr}, .results = device + l.results};
  for (int b = 0; b < 2; ++b) {
    if (l.level_keys[b] > 0) {
      TANDEM_ASSIGN_OR_RETURN(buffers.levels[b], arena.Take<uint64_t>(l.level_keys[b]));
    }
  }
  cudaStream_t stream = context.stream;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device, host, l.layout_bytes, cudaMemcpyHostToDevice, stream));
  DeviceBatch batch;
  batch.queries = reinterpret_cast<const BatchQuery*>(device + l.queries);
  batch.and_begin = reinterpret_cast<const uint32_t*>(device + l.and_begin);
  batch.or_begin = reinterpret_cast<const uint32_t*>(device + l.or_begin);
  batch.terms = reinterpret_cast<const BatchTerm*>(device + l.terms);
  batch.spans = reinterpret_cast<const ReduceSpan*>(device + l.spans);
  batch.reduce_begin = reinterpret_cast<const uint32_t*>(device + l.reduce_begin);
  batch.num_queries = l.num_queries;
  batch.and_blocks = static_cast<uint32_t>(l.and_blocks);
  batch.or_blocks = static_cast<uint32_t>(l.or_blocks);
  batch.levels = l.levels;
  for (uint32_t level = 0; level < l.levels; ++level) {
    batch.reduce_blocks[level] =
        l.reduce_blocks[uint64_t{level} * (l.num_queries + 1) + l.num_queries];
  }
  TANDEM_RETURN_IF_ERROR(LaunchBatch(batch, buffers, norms, num_docs, range, stream));
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
    index::SearchResult& result = *items[i].result;
    const ReduceSpan answer = l.span[uint64_t{l.levels} * l.num_queries + i];
    std::vector<uint64_t> keys(out + answer.key_begin, out + answer.key_begin + out_count[i]);
    std::sort(keys.begin(), keys.end());
    result.hits.clear();
    result.hits.reserve(keys.size());
    for (uint64_t key : keys) {
      const uint32_t bits = ~static_cast<uint32_t>(key >> 32);
      float score;
      std::memcpy(&score, &bits, sizeof(score));
      result.hits.push_back({static_cast<uint32_t>(key), score});
    }
    if (executed[i] == 0) result.stats.executed_mode = index::QueryMode::kAnd;
    if (executed[i] == 1) result.stats.executed_mode = index::QueryMode::kOr;
    if (bq.run_and) {
      result.stats.documents_scored += and_count[i];
      result.stats.postings_decoded += LeadPostings(items[i]);
    }
    if (executed[i] == 1) {
      for (const auto& list : items[i].lists) result.stats.postings_decoded += list->num_postings;
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::gpu
