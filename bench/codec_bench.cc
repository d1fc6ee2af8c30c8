// Encode and decode speed of every registered block codec, in integers per second, on lists whose
// values follow the distributions an index stores: docID gaps of frequent, medium and rare terms
// (geometric, as for terms placed at random in the collection) and term frequencies minus one
// (power law). Ding et al. 2009, section 6 compares Rice and PForDelta the same way.
//
// Prints Google Benchmark's table and writes JSON (machine, caches, commit and every figure) to
// codec_bench.json unless --benchmark_out is given:
//
//   codec_bench --benchmark_out=bench/results/codec.json --benchmark_out_format=json
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/version.h"
#include "benchmark/benchmark.h"
#include "index/block_codec.h"

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

}  // namespace
}  // namespace tandem::index

int main(int argc, char** argv) {
  using tandem::index::BlockCodec;
  // Write JSON next to the table unless the caller chose where.
  std::vector<char*> args(argv, argv + argc);
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
