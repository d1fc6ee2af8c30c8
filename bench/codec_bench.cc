// Encode and decode speed of every registered block codec, in integers per second, on lists whose
// values follow the distributions an index stores: docID gaps of frequent, medium and rare terms
// (geometric, as for terms placed at random in the collection) and term frequencies minus one
// (power law). Ding et al. 2009, section 6 compares Rice and PForDelta the same way.
//
// DecodeDocids/<codec>/<path>/<lists> is what a cursor pays for a block of docIDs: the codec's
// Decode of the gaps plus GapsToDocids, block after block into one 128-entry buffer, on every SIMD
// path the CPU has (index/simdbp_codec.h; the path changes simdbp's unpacking and every codec's
// prefix sum). Its items are docIDs, one thread, so items_per_second is docIDs/s per core. With
// --index=DIR the lists are a sample of that index's own lists (whole lists, in random order, until
// --sample_postings postings), re-encoded with each codec, so the mix of list lengths and gaps is
// the index's; without it, the synthetic gap shapes below.
//
// CursorWalk/<what>/<codec> is what a query pays per posting of a list it reads whole: the CPU
// engine's cursor (cpu/cursor.h) over the index's own lists, next() from the first posting to the
// last, reading each docID ("docids") or each docID and its frequency ("docids+freqs"). The lists
// are those of --walk_terms=FILE (one index term a line) that hold at least --walk_min_postings
// postings; --walk_written=FILE writes the lists walked, a line each (the term, a tab and its
// number of postings), so that another engine can
// walk the same lists (bench/pisa_side_by_side.sh's decode phase runs PISA's `or` and `or_freq`
// on them as one-term queries). Items are postings, so items_per_second is docIDs/s per core.
//
// Prints Google Benchmark's table and writes JSON (machine, caches, commit and every figure) to
// codec_bench.json unless --benchmark_out is given:
//
//   codec_bench --benchmark_out=codec.json --benchmark_out_format=json
//   codec_bench --index=/tmp/gov2like --benchmark_filter='DecodeDocids/.*/index'
//   codec_bench --index=/tmp/gov2like --walk_terms=terms.txt --walk_min_postings=200000
//     --walk_written=walked.txt --benchmark_filter=CursorWalk
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "benchmark/benchmark.h"
#include "cpu/cursor.h"
#include "index/block_codec.h"
#include "index/index.h"
#include "index/posting_list.h"
#include "index/simdbp_codec.h"

namespace tandem::index {
namespace {

// 512 blocks: large enough to leave the first-level cache, small enough for the second.
constexpr size_t kListLength = 512 * kBlockSize;

struct ListShape {
  const char* name;
  double mean_gap;  // mean of the geometric gaps; 0 for the frequency distribution
};

constexpr ListShape kShapes[] = {
    {"gaps_dense", 2},      // a stop word: in half the documents
    {"gaps_medium", 40},    // a common term
    {"gaps_sparse", 5000},  // a rare term in a large collection
    {"freqs", 0},           // tf - 1 with P(tf >= k) = k^-1.5
};

std::vector<uint32_t> MakeList(const ListShape& shape) {
  std::mt19937_64 rng(42);
  std::vector<uint32_t> values(kListLength);
  if (shape.mean_gap > 0) {
    // Gaps between distinct docIDs are at least 1.
    std::geometric_distribution<uint32_t> gap(1.0 / shape.mean_gap);
    for (auto& v : values) v = 1 + gap(rng);
  } else {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (auto& v : values) {
      v = static_cast<uint32_t>(std::min(1e6, std::floor(std::pow(1.0 - unit(rng), -1 / 1.5)))) - 1;
    }
  }
  return values;
}

std::string EncodeList(const BlockCodec& codec, const std::vector<uint32_t>& values,
                       uint32_t param) {
  std::string out;
  for (size_t i = 0; i < values.size(); i += kBlockSize) {
    codec.Encode(values.data() + i, std::min(kBlockSize, values.size() - i), param, &out);
  }
  return out;
}

void BM_Encode(benchmark::State& state, const BlockCodec* codec, ListShape shape) {
  const std::vector<uint32_t> values = MakeList(shape);
  const uint32_t param = codec->ChooseParameter(values.data(), values.size());
  std::string out;
  out.reserve(values.size() * 5);
  for (auto _ : state) {
    out.clear();
    for (size_t i = 0; i < values.size(); i += kBlockSize) {
      codec->Encode(values.data() + i, std::min(kBlockSize, values.size() - i), param, &out);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * values.size()));
  state.counters["bits_per_int"] = 8.0 * static_cast<double>(out.size()) / values.size();
}

void BM_Decode(benchmark::State& state, const BlockCodec* codec, ListShape shape) {
  const std::vector<uint32_t> values = MakeList(shape);
  const uint32_t param = codec->ChooseParameter(values.data(), values.size());
  const std::string bytes = EncodeList(*codec, values, param);
  const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* end = begin + bytes.size();
  std::vector<uint32_t> decoded(values.size());
  for (auto _ : state) {
    const uint8_t* p = begin;
    for (size_t i = 0; i < values.size(); i += kBlockSize) {
      p = codec->Decode(p, end, std::min(kBlockSize, values.size() - i), param, decoded.data() + i);
    }
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  if (decoded != values) state.SkipWithError("decoded values differ from the encoded ones");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * values.size()));
  state.counters["bits_per_int"] = 8.0 * static_cast<double>(bytes.size()) / values.size();
}

// Lists of docIDs, concatenated: list i is docids[begin[i], begin[i + 1]).
struct DocidLists {
  std::vector<uint32_t> docids;
  std::vector<size_t> begin = {0};
  size_t size() const { return begin.size() - 1; }
};

// One list per gap shape, kListLength docIDs each.
DocidLists SyntheticLists(const ListShape& shape) {
  DocidLists lists;
  std::vector<uint32_t> gaps = MakeList(shape);
  std::partial_sum(gaps.begin(), gaps.end(), gaps.begin());
  lists.docids = std::move(gaps);
  lists.begin.push_back(lists.docids.size());
  return lists;
}

// Whole lists of the index at `dir`, its terms in a random order (seed 1), until `max_postings`.
DocidLists SampleIndexLists(const std::string& dir, uint64_t max_postings) {
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(dir);
  if (!index.ok()) {
    std::fprintf(stderr, "codec_bench: %s\n", index.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<uint64_t> order((*index)->num_terms());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  DocidLists lists;
  for (uint64_t ordinal : order) {
    const TermInfo term = (*index)->term_at(ordinal);
    if (lists.docids.size() + term.df > max_postings) continue;
    absl::StatusOr<PostingListView> list = (*index)->postings(term);
    const size_t first = lists.docids.size();
    lists.docids.resize(first + term.df);
    for (uint32_t b = 0; list.ok() && b < list->num_blocks(); ++b) {
      const absl::Status s =
          list->DecodeDocids((*index)->codec(), b, lists.docids.data() + first + b * kBlockSize);
      if (!s.ok()) list = s;
    }
    if (!list.ok()) {
      std::fprintf(stderr, "codec_bench: list of %s: %s\n", std::string(term.term).c_str(),
                   list.status().ToString().c_str());
      std::exit(1);
    }
    lists.begin.push_back(lists.docids.size());
    if (lists.docids.size() + kBlockSize > max_postings) break;
  }
  std::fprintf(stderr, "codec_bench: %zu lists of %s, %zu postings\n", lists.size(), dir.c_str(),
               lists.docids.size());
  return lists;
}

// The lists encoded as an index stores their docIDs: per list a parameter, per block the gaps from
// the previous block's last docID (0 before the list).
struct EncodedLists {
  std::string bytes;
  std::vector<size_t> list_end;  // bytes of lists 0..i
  std::vector<uint32_t> params;
};

EncodedLists EncodeDocids(const BlockCodec& codec, const DocidLists& lists) {
  EncodedLists out;
  std::vector<uint32_t> gaps;
  for (size_t l = 0; l < lists.size(); ++l) {
    const uint32_t* docids = lists.docids.data() + lists.begin[l];
    const size_t n = lists.begin[l + 1] - lists.begin[l];
    gaps.resize(n);
    for (size_t i = 0; i < n; ++i) gaps[i] = docids[i] - (i == 0 ? 0 : docids[i - 1]);
    const uint32_t param = codec.ChooseParameter(gaps.data(), n);
    for (size_t i = 0; i < n; i += kBlockSize) {
      codec.Encode(gaps.data() + i, std::min(kBlockSize, n - i), param, &out.bytes);
    }
    out.params.push_back(param);
    out.list_end.push_back(out.bytes.size());
  }
  return out;
}

// Decodes every list block by block into one buffer, as a cursor does. Calls check(list, first
// posting, docIDs, n) per block; false when a block does not decode.
template <typename Check>
bool DecodeDocidLists(const BlockCodec& codec, const DocidLists& lists, const EncodedLists& enc,
                      Check check) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(enc.bytes.data());
  const uint8_t* p = bytes;
  uint32_t block[kBlockSize];
  bool ok = true;
  for (size_t l = 0; l < lists.size(); ++l) {
    const uint8_t* end = bytes + enc.list_end[l];
    const size_t n = lists.begin[l + 1] - lists.begin[l];
    uint32_t base = 0;
    for (size_t i = 0; i < n; i += kBlockSize) {
      const size_t m = std::min(kBlockSize, n - i);
      p = codec.Decode(p, end, m, enc.params[l], block);
      if (p == nullptr) return false;
      ok &= GapsToDocids(base, block, m, block);
      base = block[m - 1];
      check(l, i, block, m);
    }
  }
  return ok;
}

// The lists each benchmark decodes, made once per source and codec.
struct DocidSource {
  std::string name;  // a shape's name or "index"
  std::function<DocidLists()> make;
};

const DocidLists& ListsOf(const DocidSource& source) {
  static auto* cache = new std::map<std::string, DocidLists>;
  auto it = cache->find(source.name);
  if (it == cache->end()) it = cache->emplace(source.name, source.make()).first;
  return it->second;
}

const EncodedLists& EncodedOf(const BlockCodec& codec, const DocidSource& source) {
  static auto* cache = new std::map<std::string, EncodedLists>;
  const std::string key = std::string(codec.name()) + "/" + source.name;
  auto it = cache->find(key);
  if (it == cache->end()) it = cache->emplace(key, EncodeDocids(codec, ListsOf(source))).first;
  return it->second;
}

void BM_DecodeDocids(benchmark::State& state, const BlockCodec* codec, SimdPath path,
                     DocidSource source) {
  if (!SetSimdPath(path)) {
    state.SkipWithError("SIMD path not available");
    return;
  }
  const DocidLists& lists = ListsOf(source);
  const EncodedLists& enc = EncodedOf(*codec, source);
  bool ok = true;
  for (auto _ : state) {
    ok &= DecodeDocidLists(*codec, lists, enc, [](size_t, size_t, const uint32_t* block, size_t) {
      benchmark::DoNotOptimize(block);
    });
    benchmark::ClobberMemory();
  }
  // Untimed: every docID as encoded.
  ok &= DecodeDocidLists(*codec, lists, enc,
                         [&](size_t l, size_t first, const uint32_t* block, size_t n) {
                           const uint32_t* want = lists.docids.data() + lists.begin[l] + first;
                           ok &= std::equal(block, block + n, want);
                         });
  if (!ok) state.SkipWithError("decoded docIDs differ from the encoded ones");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * lists.docids.size()));
  state.SetLabel(std::string(SimdPathName(path)));
  state.counters["bits_per_docid"] =
      8.0 * static_cast<double>(enc.bytes.size()) / static_cast<double>(lists.docids.size());
  state.counters["lists"] = static_cast<double>(lists.size());
}

// The index's lists of the terms in `terms_file` that hold at least `min_postings` postings, in
// the file's order, each once. Exits with a message on an unreadable file, a term the index does
// not hold or when no list is long enough.
struct WalkLists {
  std::unique_ptr<Index> index;
  std::vector<TermInfo> terms;
  uint64_t postings = 0;
};

WalkLists OpenWalkLists(const std::string& dir, const std::string& terms_file,
                        uint64_t min_postings, const std::string& written_file) {
  const auto fail = [](const std::string& what) {
    std::fprintf(stderr, "codec_bench: %s\n", what.c_str());
    std::exit(1);
  };
  if (dir.empty()) fail("--walk_terms needs --index=DIR");
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(dir);
  if (!index.ok()) fail(index.status().ToString());
  WalkLists walk;
  walk.index = *std::move(index);
  std::ifstream in(terms_file);
  if (!in) fail("cannot read --walk_terms file '" + terms_file + "'");
  std::set<uint64_t> seen;  // ordinals
  uint64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;
    const std::optional<TermInfo> term = walk.index->Lookup(line);
    if (!term.has_value()) {
      fail(absl::StrFormat("%s line %d: the index holds no term '%s'", terms_file, line_number,
                           line));
    }
    if (term->df < min_postings) continue;
    if (!seen.insert(term->ordinal).second) continue;
    walk.terms.push_back(*term);
    walk.postings += term->df;
  }
  if (walk.terms.empty()) {
    fail(absl::StrFormat("no term of '%s' has a list of %d postings or more", terms_file,
                         min_postings));
  }
  if (!written_file.empty()) {
    std::ofstream out(written_file);
    for (const TermInfo& term : walk.terms) out << term.term << '\t' << term.df << '\n';
    if (!out.flush()) fail("cannot write --walk_written file '" + written_file + "'");
  }
  std::fprintf(stderr, "codec_bench: walking %zu lists of %s, %llu postings\n", walk.terms.size(),
               dir.c_str(), static_cast<unsigned long long>(walk.postings));
  return walk;
}

// Walks every list once with next(); returns the sum of the docIDs (and of the frequencies when
// `freqs`), so that nothing is optimized away and the walk can be checked.
template <bool kFreqs>
absl::StatusOr<std::pair<uint64_t, uint64_t>> WalkOnce(const WalkLists& walk) {
  uint64_t docid_sum = 0, freq_sum = 0, postings = 0;
  for (const TermInfo& term : walk.terms) {
    TANDEM_ASSIGN_OR_RETURN(PostingListView list, walk.index->postings(term));
    cpu::Cursor cursor(list, walk.index->codec(), nullptr);
    for (; cursor.docid() != cpu::Cursor::kEnd; cursor.next()) {
      docid_sum += cursor.docid();
      if constexpr (kFreqs) freq_sum += cursor.freq();
      ++postings;
    }
    if (!cursor.status().ok()) return cursor.status();
  }
  if (postings != walk.postings) return absl::DataLossError("a walk missed postings");
  return std::make_pair(docid_sum, freq_sum);
}

template <bool kFreqs>
void BM_CursorWalk(benchmark::State& state, const WalkLists* walk) {
  // Untimed: the walk's docIDs are the lists' decoded ones and its frequencies sum to the cfs.
  uint64_t want_docids = 0, want_freqs = 0;
  uint32_t block[kBlockSize];
  for (const TermInfo& term : walk->terms) {
    absl::StatusOr<PostingListView> list = walk->index->postings(term);
    for (uint32_t b = 0; list.ok() && b < list->num_blocks(); ++b) {
      const absl::Status s = list->DecodeDocids(walk->index->codec(), b, block);
      if (!s.ok()) list = s;
      for (uint32_t i = 0; list.ok() && i < list->block_postings(b); ++i) want_docids += block[i];
    }
    if (!list.ok()) {
      state.SkipWithError(list.status().ToString().c_str());
      return;
    }
    want_freqs += term.cf;
  }
  absl::StatusOr<std::pair<uint64_t, uint64_t>> sums;
  for (auto _ : state) {
    sums = WalkOnce<kFreqs>(*walk);
    benchmark::DoNotOptimize(sums);
  }
  if (!sums.ok()) {
    state.SkipWithError(sums.status().ToString().c_str());
    return;
  }
  if (sums->first != want_docids || (kFreqs && sums->second != want_freqs)) {
    state.SkipWithError("the walk's docIDs or frequencies differ from the lists'");
    return;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * walk->postings));
  state.counters["lists"] = static_cast<double>(walk->terms.size());
  state.counters["postings"] = static_cast<double>(walk->postings);
}

}  // namespace
}  // namespace tandem::index

int main(int argc, char** argv) {
  using tandem::index::BlockCodec;
  // Write JSON next to the table unless the caller chose where.
  // --index=DIR and --sample_postings=N are ours; the rest go to Google Benchmark.
  std::string index_dir, walk_terms, walk_written;
  uint64_t sample_postings = uint64_t{1} << 25;
  uint64_t walk_min_postings = 0;
  std::vector<char*> args;
  const auto number = [](std::string_view flag, const char* value) {
    char* end = nullptr;
    const uint64_t n = std::strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0') {
      std::fprintf(stderr, "codec_bench: %.*s wants a number, not '%s'\n",
                   static_cast<int>(flag.size()), flag.data(), value);
      std::exit(2);
    }
    return n;
  };
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--index=")) {
      index_dir = arg.substr(8);
    } else if (arg.starts_with("--sample_postings=")) {
      sample_postings = number("--sample_postings", argv[i] + 18);
    } else if (arg.starts_with("--walk_terms=")) {
      walk_terms = arg.substr(13);
    } else if (arg.starts_with("--walk_min_postings=")) {
      walk_min_postings = number("--walk_min_postings", argv[i] + 20);
    } else if (arg.starts_with("--walk_written=")) {
      walk_written = arg.substr(15);
    } else {
      args.push_back(argv[i]);
    }
  }
  const bool has_out = std::any_of(args.begin(), args.end(), [](const char* a) {
    return std::string_view(a).starts_with("--benchmark_out=");
  });
  std::string out_flag = "--benchmark_out=codec_bench.json";
  std::string format_flag = "--benchmark_out_format=json";
  if (!has_out) {
    args.push_back(out_flag.data());
    args.push_back(format_flag.data());
  }
  int new_argc = static_cast<int>(args.size());
  benchmark::Initialize(&new_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(new_argc, args.data())) return 1;
  benchmark::AddCustomContext("commit", tandem::base::Commit());

  for (const std::string& name : tandem::index::BlockCodecNames()) {
    const BlockCodec* codec = tandem::index::GetBlockCodec(name);
    for (const auto& shape : tandem::index::kShapes) {
      benchmark::RegisterBenchmark(("Encode/" + name + "/" + shape.name).c_str(),
                                   tandem::index::BM_Encode, codec, shape);
      benchmark::RegisterBenchmark(("Decode/" + name + "/" + shape.name).c_str(),
                                   tandem::index::BM_Decode, codec, shape);
    }
  }
  using tandem::index::DocidSource;
  std::vector<DocidSource> sources;
  for (const auto& shape : tandem::index::kShapes) {
    if (shape.mean_gap == 0) continue;
    sources.push_back({shape.name, [shape] { return tandem::index::SyntheticLists(shape); }});
  }
  if (!index_dir.empty()) {
    sources.push_back({"index", [index_dir, sample_postings] {
                         return tandem::index::SampleIndexLists(index_dir, sample_postings);
                       }});
  }
  for (const std::string& name : tandem::index::BlockCodecNames()) {
    const BlockCodec* codec = tandem::index::GetBlockCodec(name);
    for (tandem::index::SimdPath path : tandem::index::AvailableSimdPaths()) {
      for (const DocidSource& source : sources) {
        benchmark::RegisterBenchmark(
            ("DecodeDocids/" + name + "/" + std::string(tandem::index::SimdPathName(path)) + "/" +
             source.name)
                .c_str(),
            tandem::index::BM_DecodeDocids, codec, path, source);
      }
    }
  }
  // Opened before any benchmark runs, so that a bad flag fails at once.
  std::unique_ptr<tandem::index::WalkLists> walk;
  if (!walk_terms.empty()) {
    walk = std::make_unique<tandem::index::WalkLists>(
        tandem::index::OpenWalkLists(index_dir, walk_terms, walk_min_postings, walk_written));
    const std::string codec(walk->index->codec().name());
    // By the wall clock, as PISA's queries tool times each query.
    benchmark::RegisterBenchmark(("CursorWalk/docids/" + codec).c_str(),
                                 tandem::index::BM_CursorWalk<false>, walk.get())
        ->UseRealTime();
    benchmark::RegisterBenchmark(("CursorWalk/docids+freqs/" + codec).c_str(),
                                 tandem::index::BM_CursorWalk<true>, walk.get())
        ->UseRealTime();
  } else if (!walk_written.empty() || walk_min_postings != 0) {
    std::fprintf(stderr, "codec_bench: --walk_written and --walk_min_postings need --walk_terms\n");
    return 2;
  }
  benchmark::AddCustomContext(
      "simd_path_default",
      std::string(tandem::index::SimdPathName(tandem::index::ActiveSimdPath())));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
