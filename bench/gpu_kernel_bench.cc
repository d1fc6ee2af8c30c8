// tandem-bench-gpu-kernels: two device stages of the query pipeline on synthetic inputs, each
// checked against the host in the same run.
//   1. Intersection (Ding et al. 2009, section 7, Figure 6): the recursive Parallel Merge Find of
//      two sorted docID lists with 0 (one binary search per element) to 3 levels of splitters, in
//      ns per element of the first list: lists of equal length from 5,000 to 16 million, and a
//      first list of 200,000 against second lists of 200,000 to 12.8 million.
//   2. Top-k (section 8): the multi-level max-heap vs a CUB radix sort, by candidate count and k.
// Prints tables and writes JSON with the machine, the commit and the GPU.
//
//   tandem-bench-gpu-kernels --json gpu_kernels.json
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/status_macros.h"
#include "bench/bench_main.h"
#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/engine/query_ops.h"

ABSL_FLAG(int, repeats, 20, "timed runs per configuration (the median is reported)");
ABSL_FLAG(int, max_levels, 3, "merge-find levels to measure, 0..N");

namespace tandem {
namespace {

using nlohmann::json;

// `n` sorted distinct docIDs drawn from [0, universe) (a sorted sample without replacement).
std::vector<uint32_t> SortedSample(uint32_t n, uint32_t universe, std::mt19937_64& rng) {
  std::vector<uint32_t> out;
  out.reserve(n);
  // Selection sampling (Knuth's Algorithm S): each value kept with probability left/remaining.
  uint32_t left = n;
  for (uint32_t v = 0; v < universe && left > 0; ++v) {
    if (rng() % (universe - v) < left) {
      out.push_back(v);
      --left;
    }
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Bench {
 public:
  absl::Status Init() {
    TANDEM_ASSIGN_OR_RETURN(stream_, gpu::CudaStream::Create());
    TANDEM_ASSIGN_OR_RETURN(arena_memory_, gpu::DeviceBuffer<char>::Allocate(kArenaBytes));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop_));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMallocHost(reinterpret_cast<void**>(&host_keys_),
                                               sizeof(uint64_t) * gpu::TopKHostWords(10000)));
    return absl::OkStatus();
  }

  // ns per element of `a` for each level count; checks the match count against the host.
  absl::StatusOr<json> Intersect(uint32_t m, uint32_t n, std::mt19937_64& rng, int max_levels) {
    // Both lists from a universe 4x the longer one: about a quarter of the shorter list matches.
    const uint32_t universe = 4 * std::max(m, n);
    const std::vector<uint32_t> a = SortedSample(m, universe, rng);
    const std::vector<uint32_t> b = SortedSample(n, universe, rng);
    std::vector<uint32_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    TANDEM_ASSIGN_OR_RETURN(auto d_a, gpu::DeviceBuffer<uint32_t>::Allocate(m));
    TANDEM_ASSIGN_OR_RETURN(auto d_b, gpu::DeviceBuffer<uint32_t>::Allocate(n));
    TANDEM_ASSIGN_OR_RETURN(auto d_lb, gpu::DeviceBuffer<uint32_t>::Allocate(m));
    TANDEM_ASSIGN_OR_RETURN(auto d_found, gpu::DeviceBuffer<uint32_t>::Allocate(m));
    TANDEM_RETURN_IF_ERROR(d_a.CopyFromHost(a.data(), m, stream_.get()));
    TANDEM_RETURN_IF_ERROR(d_b.CopyFromHost(b.data(), n, stream_.get()));
    json row = {{"a", m}, {"b", n}, {"matches", both.size()}};
    std::vector<uint32_t> found(m);
    for (int levels = 0; levels <= max_levels; ++levels) {
      std::vector<double> ns;
      for (int r = 0; r <= absl::GetFlag(FLAGS_repeats); ++r) {
        gpu::ScratchArena arena(arena_memory_.data(), kArenaBytes);
        TANDEM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, stream_.get()));
        TANDEM_RETURN_IF_ERROR(gpu::MergeFind(d_a.data(), m, d_b.data(), n, levels, d_lb.data(),
                                              d_found.data(), arena, stream_.get()));
        TANDEM_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, stream_.get()));
        TANDEM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
        float ms = 0;
        TANDEM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
        if (r > 0) ns.push_back(ms * 1e6 / m);  // run 0 warms up
      }
      TANDEM_RETURN_IF_ERROR(d_found.CopyToHost(found.data(), m, stream_.get()));
      TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
      uint64_t matches = 0;
      for (uint32_t f : found) matches += f;
      if (matches != both.size()) {
        return absl::InternalError(absl::StrCat("merge-find with ", levels, " levels found ",
                                                matches, " of ", both.size(), " matches"));
      }
      row["ns_per_element"][std::to_string(levels)] = Median(ns);
    }
    return row;
  }

  // Median ms of each top-k method; checks both against a host sort.
  absl::StatusOr<json> TopK(uint32_t n, uint32_t k, std::mt19937_64& rng) {
    std::vector<float> scores(n);
    for (float& s : scores) s = rng() % 2 == 0 ? 0.0f : static_cast<float>(rng() % 100000) / 7.0f;
    std::vector<uint64_t> keys;  // the host's rank order: score desc, docID asc
    for (uint32_t i = 0; i < n; ++i) {
      if (scores[i] > 0) keys.push_back((uint64_t{~Bits(scores[i])} << 32) | i);
    }
    const size_t take = std::min<size_t>(k, keys.size());
    std::partial_sort(keys.begin(), keys.begin() + take, keys.end());
    TANDEM_ASSIGN_OR_RETURN(auto d_scores, gpu::DeviceBuffer<float>::Allocate(n));
    TANDEM_RETURN_IF_ERROR(d_scores.CopyFromHost(scores.data(), n, stream_.get()));
    json row = {{"n", n}, {"k", k}};
    for (const char* method : {"radix", "heap"}) {
      std::vector<double> ms;
      std::vector<gpu::DeviceHit> hits;
      for (int r = 0; r <= absl::GetFlag(FLAGS_repeats); ++r) {
        gpu::ScratchArena arena(arena_memory_.data(), kArenaBytes);
        uint64_t scored = 0;
        const auto t0 = std::chrono::steady_clock::now();
        auto result = std::string(method) == "radix"
                          ? gpu::TopKRadix(d_scores.data(), nullptr, n, k, host_keys_, &scored,
                                           arena, stream_.get())
                          : gpu::TopKHeap(d_scores.data(), nullptr, n, k, host_keys_, &scored,
                                          arena, stream_.get());
        const auto t1 = std::chrono::steady_clock::now();
        if (!result.ok()) return result.status();
        if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        hits = *std::move(result);
      }
      if (hits.size() != take) return absl::InternalError("top-k returned the wrong count");
      for (size_t i = 0; i < take; ++i) {
        if (hits[i].docid != static_cast<uint32_t>(keys[i]) ||
            Bits(hits[i].score) != ~static_cast<uint32_t>(keys[i] >> 32)) {
          return absl::InternalError(absl::StrCat(method, " top-k differs at rank ", i));
        }
      }
      row["ms"][method] = Median(ms);
    }
    return row;
  }

  ~Bench() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (host_keys_ != nullptr) cudaFreeHost(host_keys_);
  }

 private:
  static uint32_t Bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
  }
  static constexpr size_t kArenaBytes = size_t{1} << 30;
  gpu::CudaStream stream_;
  gpu::DeviceBuffer<char> arena_memory_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  uint64_t* host_keys_ = nullptr;
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "tandem-bench-gpu-kernels: %s\n", s.ToString().c_str());
  return 1;
}

int Run() {
  absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
  if (!device.ok()) return Fail(device.status());
  Bench bench;
  if (absl::Status s = bench.Init(); !s.ok()) return Fail(s);
  const int max_levels = std::clamp(absl::GetFlag(FLAGS_max_levels), 0, gpu::kMaxMergeFindLevels);
  json out;
  out["machine"] = base::MachineInfo(device->name);
  out["gpu_name"] = device->name;
  out["repeats"] = absl::GetFlag(FLAGS_repeats);
  std::mt19937_64 rng(1);

  auto table = [&](const char* title, const std::vector<std::pair<uint32_t, uint32_t>>& sizes,
                   const char* key) -> absl::Status {
    std::printf("%s (ns per element of the first list; median of %d)\n%10s %10s", title,
                absl::GetFlag(FLAGS_repeats), "first", "second");
    for (int l = 0; l <= max_levels; ++l) std::printf("   levels=%d", l);
    std::printf("\n");
    for (auto [m, n] : sizes) {
      TANDEM_ASSIGN_OR_RETURN(json row, bench.Intersect(m, n, rng, max_levels));
      std::printf("%10u %10u", m, n);
      for (int l = 0; l <= max_levels; ++l) {
        std::printf(" %10.3f", row["ns_per_element"][std::to_string(l)].get<double>());
      }
      std::printf("\n");
      out[key].push_back(row);
    }
    std::printf("\n");
    return absl::OkStatus();
  };
  std::vector<std::pair<uint32_t, uint32_t>> equal, ratio;
  for (uint32_t n : {5'000u, 20'000u, 100'000u, 500'000u, 1'000'000u, 4'000'000u, 16'000'000u}) {
    equal.push_back({n, n});
  }
  for (uint32_t n : {200'000u, 800'000u, 3'200'000u, 12'800'000u}) ratio.push_back({200'000u, n});
  if (absl::Status s =
          table("Intersection, lists of equal length (Figure 6)", equal, "intersect_equal");
      !s.ok()) {
    return Fail(s);
  }
  if (absl::Status s =
          table("Intersection, first list 200,000, second longer", ratio, "intersect_ratio");
      !s.ok()) {
    return Fail(s);
  }

  std::printf(
      "Top-k: CUB radix sort vs multi-level max-heap (median ms, host call to result)\n"
      "%10s %6s %10s %10s\n",
      "candidates", "k", "radix", "heap");
  for (uint32_t n : {10'000u, 100'000u, 1'000'000u, 25'000'000u}) {
    for (uint32_t k : {10u, 1000u, 10000u}) {
      absl::StatusOr<json> row = bench.TopK(n, k, rng);
      if (!row.ok()) return Fail(row.status());
      std::printf("%10u %6u %10.3f %10.3f\n", n, k, (*row)["ms"]["radix"].get<double>(),
                  (*row)["ms"]["heap"].get<double>());
      out["top_k"].push_back(*row);
    }
  }
  std::printf("\nall results checked against the host: yes\n");
  base::WriteJson(absl::GetFlag(FLAGS_json), out);
  return 0;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-gpu-kernels", "[--json FILE]",
                  "merge-find intersection by recursion level and top-k methods, every "
                  "result checked on the host.");
