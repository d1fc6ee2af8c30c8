// File: bitmap_build_bench.cc
//
// tandem-bench-bitmap-build: building WAH and PLWAH bitmap indexes of one attribute column on the
// GPU against the CPU builder (Lemire's incremental algorithm, one thread), after Fusco et al.
// 2013:
// - Figure 5: records/s against the column's cardinality (256 ... 65,536), uniform and Zipf
//   columns of 25M-100M records;
// - Figure 6: the share of each step of the GPU build (20M uniform records of cardinality 65,536,
//   the paper's setup);
// - the compressed sizes against the uncompressed bitmaps.
// Every GPU build is compared with the CPU builder's, byte for byte. The GPU time is a whole build
// from the host's column (pinned) to the host's keys, offsets and words (pinned), copies included,
// as the paper's data flow (section 3.1); the median of --repeats builds on a warm builder.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "bench/bench_main.h"
#include "filter/bitmap.h"
#include "gpu/bitmaps/bitmap_build.h"
#include "gpu/device/device.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, records, "25000000", "column lengths (records), comma-separated");
ABSL_FLAG(std::string, cardinalities, "256,1024,4096,16384,65536",
          "column cardinalities, comma-separated");
ABSL_FLAG(std::string, distributions, "uniform,zipf", "uniform and/or zipf (exponent 1)");
ABSL_FLAG(std::string, codecs, "wah,plwah", "bitmap codecs");
ABSL_FLAG(int, repeats, 5, "GPU builds per point (the median is reported)");
ABSL_FLAG(int, cpu_repeats, 1, "CPU builds per point (the median is reported)");
ABSL_FLAG(uint32_t, stage_records, 20000000, "records of the step breakdown (Figure 6); 0: none");
ABSL_FLAG(uint32_t, stage_cardinality, 65536, "cardinality of the step breakdown");
ABSL_FLAG(uint64_t, seed, 1, "random seed");

namespace tandem {
namespace {

using json = nlohmann::json;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "tandem-bench-bitmap-build: %s\n", std::string(status.message()).c_str());
  return 1;
}

absl::StatusOr<std::vector<uint64_t>> ParseList(const std::string& flag, const char* name) {
  std::vector<uint64_t> out;
  for (absl::string_view part : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v == 0 || v > 0xFFFFFFFFull) {
      return absl::InvalidArgumentError(absl::StrCat("bad --", name, " entry '", part, "'"));
    }
    out.push_back(v);
  }
  return out;
}

std::vector<uint32_t> MakeColumn(uint64_t records, uint32_t cardinality, bool zipf,
                                 std::mt19937_64& rng) {
  std::vector<uint32_t> values(records);
  if (!zipf) {
    for (auto& v : values) v = uint32_t(rng() % cardinality);
    return values;
  }
  std::vector<double> cdf(cardinality);
  double sum = 0;
  for (uint32_t i = 0; i < cardinality; ++i) cdf[i] = (sum += 1.0 / (i + 1));
  std::uniform_real_distribution<double> u(0, sum);
  for (auto& v : values) {
    v = uint32_t(std::upper_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    v = std::min(v, cardinality - 1);
  }
  return values;
}

template <typename Fn>
double MedianSeconds(int repeats, Fn&& fn) {
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const absl::Time begin = absl::Now();
    fn();
    seconds.push_back(absl::ToDoubleSeconds(absl::Now() - begin));
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

json Times(const gpu::BitmapBuildTimes& t) {
  return json{{"upload_ms", t.upload_ms},     {"sort_ms", t.sort_ms},
              {"literals_ms", t.literals_ms}, {"merge_ms", t.merge_ms},
              {"fills_ms", t.fills_ms},       {"fuse_ms", t.fuse_ms},
              {"offsets_ms", t.offsets_ms},   {"download_ms", t.download_ms}};
}

bool SameColumns(const gpu::PinnedBitmapColumns& g, const filter::BitmapColumns& c) {
  return g.num_keys == c.keys.size() && g.num_words == c.words.size() &&
         std::equal(c.keys.begin(), c.keys.end(), g.keys) &&
         std::equal(c.offsets.begin(), c.offsets.end(), g.offsets) &&
         std::equal(c.words.begin(), c.words.end(), g.words);
}

int Main() {
  absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
  if (!device.ok()) return Fail(device.status());
  auto records_list = ParseList(absl::GetFlag(FLAGS_records), "records");
  if (!records_list.ok()) return Fail(records_list.status());
  auto cardinalities = ParseList(absl::GetFlag(FLAGS_cardinalities), "cardinalities");
  if (!cardinalities.ok()) return Fail(cardinalities.status());
  std::vector<std::string> distributions =
      absl::StrSplit(absl::GetFlag(FLAGS_distributions), ',', absl::SkipEmpty());
  std::vector<filter::BitmapCodec> codecs;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_codecs), ',', absl::SkipEmpty())) {
    auto codec = filter::ParseBitmapCodec(std::string_view(name.data(), name.size()));
    if (!codec.ok()) return Fail(codec.status());
    codecs.push_back(*codec);
  }
  for (const std::string& d : distributions) {
    if (d != "uniform" && d != "zipf") {
      return Fail(absl::InvalidArgumentError(absl::StrCat("unknown distribution '", d, "'")));
    }
  }
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  const int cpu_repeats = std::max(1, absl::GetFlag(FLAGS_cpu_repeats));
  auto builder = gpu::GpuBitmapBuilder::Create();
  if (!builder.ok()) return Fail(builder.status());
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  std::printf("%s\n\n%-8s %-5s %10s %6s %12s %12s %8s %10s %10s %7s %s\n", device->name.c_str(),
              "dist", "codec", "records", "card", "GPU rec/s", "CPU rec/s", "GPU/CPU", "MB",
              "raw MB", "ratio", "check");
  json points = json::array();
  int mismatches = 0;
  double plwah_256_rate = 0, min_speedup = 0;
  bool any_speedup = false;

  for (uint64_t records : *records_list) {
    for (const std::string& distribution : distributions) {
      for (uint64_t cardinality : *cardinalities) {
        std::vector<uint32_t> column =
            MakeColumn(records, uint32_t(cardinality), distribution == "zipf", rng);
        // Pinned, as a recorder's capture buffer: copied at full PCIe speed.
        const bool pinned =
            cudaHostRegister(column.data(), column.size() * sizeof(uint32_t), 0) == cudaSuccess;
        for (filter::BitmapCodec codec : codecs) {
          absl::StatusOr<filter::BitmapColumns> cpu;
          const double cpu_seconds = MedianSeconds(
              cpu_repeats, [&] { cpu = filter::BuildBitmaps(codec, uint32_t(records), column); });
          if (!cpu.ok()) return Fail(cpu.status());
          // A first build grows the builder's buffers; the timed ones reuse them.
          auto warm = (*builder)->BuildPinned(codec, uint32_t(records), column);
          if (!warm.ok()) return Fail(warm.status());
          absl::StatusOr<gpu::PinnedBitmapColumns> got;
          const double gpu_seconds = MedianSeconds(
              repeats, [&] { got = (*builder)->BuildPinned(codec, uint32_t(records), column); });
          if (!got.ok()) return Fail(got.status());
          const bool same = SameColumns(*got, *cpu);
          mismatches += same ? 0 : 1;
          gpu::BitmapBuildTimes times;
          auto timed = (*builder)->BuildPinned(codec, uint32_t(records), column, {}, &times);
          if (!timed.ok()) return Fail(timed.status());
          const double bytes = double(cpu->words.size()) * 4;
          const double raw = double(cpu->keys.size()) * double(records) / 8;
          const double gpu_rate = records / gpu_seconds, cpu_rate = records / cpu_seconds;
          std::printf("%-8s %-5s %10llu %6llu %12.3g %12.3g %7.1fx %10.1f %10.1f %6.3f %s\n",
                      distribution.c_str(), std::string(filter::BitmapCodecName(codec)).c_str(),
                      static_cast<unsigned long long>(records),
                      static_cast<unsigned long long>(cardinality), gpu_rate, cpu_rate,
                      gpu_rate / cpu_rate, bytes / 1e6, raw / 1e6, bytes / raw,
                      same ? "same bytes" : "MISMATCH");
          if (codec == filter::BitmapCodec::kPlwah && cardinality == 256) {
            plwah_256_rate = std::max(plwah_256_rate, gpu_rate);
          }
          min_speedup =
              any_speedup ? std::min(min_speedup, gpu_rate / cpu_rate) : gpu_rate / cpu_rate;
          any_speedup = true;
          points.push_back(json{{"distribution", distribution},
                                {"codec", filter::BitmapCodecName(codec)},
                                {"records", records},
                                {"cardinality", cardinality},
                                {"columns_present", cpu->keys.size()},
                                {"gpu_seconds", gpu_seconds},
                                {"cpu_seconds", cpu_seconds},
                                {"gpu_records_per_second", gpu_rate},
                                {"cpu_records_per_second", cpu_rate},
                                {"speedup", gpu_rate / cpu_rate},
                                {"compressed_bytes", bytes},
                                {"uncompressed_bytes", raw},
                                {"input_pinned", pinned},
                                {"gpu_steps", Times(times)},
                                {"same_bytes", same}});
        }
        if (pinned) cudaHostUnregister(column.data());
      }
    }
  }

  // Figure 6: the steps of one build.
  json stages = json::array();
  const uint32_t stage_records = absl::GetFlag(FLAGS_stage_records);
  if (stage_records > 0) {
    std::vector<uint32_t> column =
        MakeColumn(stage_records, absl::GetFlag(FLAGS_stage_cardinality), false, rng);
    const bool pinned =
        cudaHostRegister(column.data(), column.size() * sizeof(uint32_t), 0) == cudaSuccess;
    std::printf("\nsteps of one build, %u uniform records of cardinality %u (ms)\n", stage_records,
                absl::GetFlag(FLAGS_stage_cardinality));
    std::printf("%-5s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n", "codec", "upload", "sort", "literal",
                "merge", "fills", "fuse", "offsets", "download", "total");
    for (filter::BitmapCodec codec : codecs) {
      gpu::BitmapBuildTimes t;
      for (int i = 0; i < 2; ++i) {  // the first grows the buffers
        auto built = (*builder)->BuildPinned(codec, stage_records, column, {}, &t);
        if (!built.ok()) return Fail(built.status());
      }
      std::printf("%-5s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f\n",
                  std::string(filter::BitmapCodecName(codec)).c_str(), t.upload_ms, t.sort_ms,
                  t.literals_ms, t.merge_ms, t.fills_ms, t.fuse_ms, t.offsets_ms, t.download_ms,
                  t.total_ms());
      json row = Times(t);
      row["codec"] = filter::BitmapCodecName(codec);
      row["total_ms"] = t.total_ms();
      stages.push_back(row);
    }
    if (pinned) cudaHostUnregister(column.data());
  }

  std::printf("\ntarget PLWAH at cardinality 256 >= 1.5e9 records/s: %.3g -> %s\n", plwah_256_rate,
              plwah_256_rate == 0       ? "not measured"
              : plwah_256_rate >= 1.5e9 ? "met"
                                        : "MISSED");
  std::printf("target GPU >= 20x the CPU builder on every point: lowest %.1fx -> %s\n", min_speedup,
              !any_speedup        ? "not measured"
              : min_speedup >= 20 ? "met"
                                  : "MISSED");
  if (mismatches > 0) std::printf("%d builds did NOT match the CPU builder\n", mismatches);

  base::WriteJson(absl::GetFlag(FLAGS_json), {{"benchmark", "bitmap_build"},
                                              {"machine", base::MachineInfo(device->name)},
                                              {"cpu_builder", "filter::BuildBitmaps, one thread"},
                                              {"repeats", repeats},
                                              {"points", points},
                                              {"steps", stages},
                                              {"mismatches", mismatches}});
  return mismatches == 0 ? 0 : 2;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(
    tandem::Main, "tandem-bench-bitmap-build",
    "[--records N,...] [--cardinalities C,...] [--json FILE]",
    "WAH and PLWAH bitmap index builds on the GPU against the CPU builder, by cardinality and "
    "distribution, with the steps of one build; every build checked byte for byte.");
