// tandem-bench-gpu-decode: GPU decompression throughput (Ding et al. 2009, section 6; Figure 4 and
// Table 1) for GPU PForDelta with blocks of 128 and 512 and for GPU Rice, with and without the
// final prefix sum, by list length (powers of two) and geometric gap mean, beside the HBM bandwidth
// bound for the bytes each decode moves. Also individual frequency fetches (section 8).
//
// Lists are generated in the run (geometric gaps: a term spread uniformly over the collection),
// built into the GPU layouts on the host, and every decoded list is checked against the CPU
// reference decoder before it is timed. One launch decodes one list; a timing is the median over
// batches of back-to-back launches bracketed by CUDA events, after warm-up. Short lists rotate over
// several copies so that the repetitions do not all hit one list in L2 (rows still marked
// l2_resident fit in L2 even so). The target: >= 100 billion docIDs/s for lists over a
// million postings.
//
//   tandem-bench-gpu-decode --json gpu_decode.json
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/version.h"
#include "bench/bench_main.h"
#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/layouts/decode.h"
#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/random_lists.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(int, min_log2, 10, "shortest list: 2^min_log2 postings");
ABSL_FLAG(int, max_log2, 26, "longest list: 2^max_log2 postings");
ABSL_FLAG(std::string, means, "2,8,32", "mean docID gaps (geometric), comma-separated");
ABSL_FLAG(std::string, codecs, "pfor128,pfor512,rice", "layouts to measure");
ABSL_FLAG(double, batch_ms, 10.0, "device time per timed batch of launches");
ABSL_FLAG(int, batches, 5, "timed batches per configuration (the median is reported)");
ABSL_FLAG(bool, freqs, true, "also measure individual frequency fetches");
ABSL_FLAG(uint64_t, seed, 2009, "random seed");

namespace {

using namespace tandem;
using nlohmann::json;

constexpr double kTargetDocidsPerSecond = 100e9;
constexpr uint64_t kTargetMinPostings = 1u << 20;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "tandem-bench-gpu-decode: %s\n", status.ToString().c_str());
  return 1;
}

struct DeviceFacts {
  std::string name;
  int sms = 0;
  int l2_bytes = 0;
  int memory_clock_khz = 0;
  int bus_width_bits = 0;
  double peak_bytes_per_second = 0;  // 2 (double data rate) * memory clock * bus width
  double copy_bytes_per_second = 0;  // measured: a device-to-device copy, bytes read + written
};

absl::StatusOr<DeviceFacts> ReadDevice(cudaStream_t stream) {
  DeviceFacts f;
  cudaDeviceProp prop;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, 0));
  f.name = prop.name;
  f.sms = prop.multiProcessorCount;
  f.l2_bytes = prop.l2CacheSize;
  // memoryClockRate left cudaDeviceProp in CUDA 13; the attributes remain.
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&f.memory_clock_khz, cudaDevAttrMemoryClockRate, 0));
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&f.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
  f.peak_bytes_per_second = 2.0 * f.memory_clock_khz * 1e3 * f.bus_width_bits / 8;

  const size_t bytes = size_t{1} << 30;
  absl::StatusOr<gpu::DeviceBuffer<uint8_t>> a = gpu::DeviceBuffer<uint8_t>::Allocate(bytes);
  if (!a.ok()) return a.status();
  absl::StatusOr<gpu::DeviceBuffer<uint8_t>> b = gpu::DeviceBuffer<uint8_t>::Allocate(bytes);
  if (!b.ok()) return b.status();
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(a->data(), 1, bytes, stream));
  absl::StatusOr<gpu::CudaEvent> start = gpu::CudaEvent::Create();
  absl::StatusOr<gpu::CudaEvent> stop = gpu::CudaEvent::Create();
  if (!start.ok() || !stop.ok()) return start.ok() ? stop.status() : start.status();
  std::vector<double> seconds;
  for (int r = 0; r < 12; ++r) {
    if (absl::Status s = start->Record(stream); !s.ok()) return s;
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(b->data(), a->data(), bytes, cudaMemcpyDeviceToDevice, stream));
    if (absl::Status s = stop->Record(stream); !s.ok()) return s;
    absl::StatusOr<float> ms = stop->MillisecondsSince(*start);
    if (!ms.ok()) return ms.status();
    if (r >= 2) seconds.push_back(*ms / 1e3);
  }
  std::sort(seconds.begin(), seconds.end());
  f.copy_bytes_per_second = 2.0 * bytes / seconds[seconds.size() / 2];
  return f;
}

// One layout of one list on the device, in `copies` copies, with as many outputs.
struct Subject {
  std::string codec;  // "pfor" or "rice"
  uint32_t block_size = 0;
  gpu::PForImage pfor;
  gpu::RiceImage rice;
  const std::vector<uint32_t>& words() const { return codec == "pfor" ? pfor.words : rice.words; }
  uint32_t bit_width() const { return codec == "pfor" ? pfor.desc.bit_width : rice.desc.bit_width; }
};

absl::Status Launch(const Subject& s, const uint32_t* image, gpu::DecodeOutput output,
                    uint32_t* out, cudaStream_t stream) {
  if (s.codec == "pfor") return gpu::DecodePForList({s.pfor.desc, image}, output, out, stream);
  return gpu::DecodeRiceList({s.rice.desc, image}, output, out, stream);
}

struct Timing {
  double median = 0, min = 0, max = 0;  // seconds per launch
  int launches = 0;                     // per batch
};

// Times `launch(i)` (i rotating over copies) in batches between events; the median batch's seconds
// per launch.
template <typename LaunchFn>
absl::StatusOr<Timing> TimeLaunches(LaunchFn launch, int copies, cudaStream_t stream) {
  absl::StatusOr<gpu::CudaEvent> start = gpu::CudaEvent::Create();
  absl::StatusOr<gpu::CudaEvent> stop = gpu::CudaEvent::Create();
  if (!start.ok() || !stop.ok()) return start.ok() ? stop.status() : start.status();
  auto batch = [&](int launches) -> absl::StatusOr<double> {
    if (absl::Status s = start->Record(stream); !s.ok()) return s;
    for (int i = 0; i < launches; ++i) {
      if (absl::Status s = launch(i % copies); !s.ok()) return s;
    }
    if (absl::Status s = stop->Record(stream); !s.ok()) return s;
    absl::StatusOr<float> ms = stop->MillisecondsSince(*start);
    if (!ms.ok()) return ms.status();
    return *ms / 1e3 / launches;
  };
  absl::StatusOr<double> warm = batch(std::max(3, copies));  // warm-up, and a first estimate
  if (!warm.ok()) return warm.status();
  absl::StatusOr<double> estimate = batch(10);
  if (!estimate.ok()) return estimate.status();
  Timing t;
  t.launches =
      static_cast<int>(std::clamp(absl::GetFlag(FLAGS_batch_ms) / 1e3 / *estimate, 10.0, 20000.0));
  std::vector<double> per_launch;
  for (int b = 0; b < absl::GetFlag(FLAGS_batches); ++b) {
    absl::StatusOr<double> s = batch(t.launches);
    if (!s.ok()) return s.status();
    per_launch.push_back(*s);
  }
  std::sort(per_launch.begin(), per_launch.end());
  t.median = per_launch[per_launch.size() / 2];
  t.min = per_launch.front();
  t.max = per_launch.back();
  return t;
}

struct Run {
  const DeviceFacts& device;
  cudaStream_t stream;
  json rows = json::array();
  int failures = 0;
};

// Decodes once into a poisoned output and compares with the reference.
absl::StatusOr<bool> Verify(const Subject& s, const uint32_t* image, gpu::DecodeOutput output,
                            uint32_t* out, const std::vector<uint32_t>& expected,
                            cudaStream_t stream) {
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out, 0xa5, expected.size() * 4, stream));
  if (absl::Status st = Launch(s, image, output, out, stream); !st.ok()) return st;
  std::vector<uint32_t> got(expected.size());
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return got == expected;
}

absl::Status MeasureList(Run& run, const Subject& s, double mean, uint64_t n,
                         double build_seconds) {
  const std::vector<uint32_t>& words = s.words();
  const uint64_t image_bytes = words.size() * 4;
  const uint64_t out_bytes = n * 4;
  const uint64_t footprint = image_bytes + out_bytes;
  const int copies = static_cast<int>(
      std::clamp<uint64_t>((4ull * run.device.l2_bytes + footprint - 1) / footprint, 1, 64));

  std::vector<gpu::DeviceBuffer<uint32_t>> images, outs;
  for (int c = 0; c < copies; ++c) {
    absl::StatusOr<gpu::DeviceBuffer<uint32_t>> image =
        gpu::DeviceBuffer<uint32_t>::Allocate(words.size());
    if (!image.ok()) return image.status();
    if (absl::Status st = image->CopyFromHost(words.data(), words.size(), run.stream); !st.ok()) {
      return st;
    }
    absl::StatusOr<gpu::DeviceBuffer<uint32_t>> out = gpu::DeviceBuffer<uint32_t>::Allocate(n);
    if (!out.ok()) return out.status();
    images.push_back(*std::move(image));
    outs.push_back(*std::move(out));
  }

  for (gpu::DecodeOutput output : {gpu::DecodeOutput::kDocids, gpu::DecodeOutput::kGaps}) {
    absl::StatusOr<std::vector<uint32_t>> expected = s.codec == "pfor"
                                                         ? gpu::ReferenceDecode(s.pfor, output)
                                                         : gpu::ReferenceDecode(s.rice, output);
    if (!expected.ok()) return expected.status();
    absl::StatusOr<bool> verified =
        Verify(s, images[0].data(), output, outs[0].data(), *expected, run.stream);
    if (!verified.ok()) return verified.status();
    if (!*verified) ++run.failures;

    absl::StatusOr<Timing> t = TimeLaunches(
        [&](int c) { return Launch(s, images[c].data(), output, outs[c].data(), run.stream); },
        copies, run.stream);
    if (!t.ok()) return t.status();
    const double rate = n / t->median;
    const double bound_seconds = (image_bytes + out_bytes) / run.device.peak_bytes_per_second;
    const double copy_bound_seconds = (image_bytes + out_bytes) / run.device.copy_bytes_per_second;
    const char* mode = output == gpu::DecodeOutput::kDocids ? "docids" : "gaps";
    run.rows.push_back(
        {{"codec", s.codec},
         {"block_size", s.block_size},
         {"mean_gap", mean},
         {"postings", n},
         {"output", mode},
         {"bit_width", s.bit_width()},
         {"exceptions", s.codec == "pfor" ? s.pfor.desc.num_exceptions : 0},
         {"bits_per_posting", 8.0 * image_bytes / n},
         {"image_bytes", image_bytes},
         {"host_build_seconds", build_seconds},
         {"copies", copies},
         {"l2_resident", uint64_t(copies) * footprint <= uint64_t(run.device.l2_bytes)},
         {"launches_per_batch", t->launches},
         {"seconds_per_list", t->median},
         {"seconds_per_list_min", t->min},
         {"seconds_per_list_max", t->max},
         {"ints_per_second", rate},
         {"bytes_read", image_bytes},
         {"bytes_written", out_bytes},
         {"bound_seconds", bound_seconds},
         {"bound_ints_per_second", n / bound_seconds},
         {"fraction_of_bound", bound_seconds / t->median},
         {"copy_bound_ints_per_second", n / copy_bound_seconds},
         {"verified", *verified}});
    std::printf("%-5s %4u %6.1f %10llu %-6s %3u %6.2f %11.2f %9.2f %9.2f %6.1f%% %s\n",
                s.codec.c_str(), s.block_size, mean, static_cast<unsigned long long>(n), mode,
                s.bit_width(), 8.0 * image_bytes / n, t->median * 1e6, rate / 1e9,
                n / bound_seconds / 1e9, 100.0 * bound_seconds / t->median,
                *verified ? "ok" : "MISMATCH");
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

absl::StatusOr<json> MeasureFreqFetch(Run& run, uint64_t n, std::mt19937_64& rng) {
  const std::vector<uint32_t> freqs = gpu::testing::ZipfFrequencies(n, 1 << 16, rng);
  absl::StatusOr<gpu::FreqImage> image = gpu::BuildFreqs(freqs);
  if (!image.ok()) return image.status();
  const uint32_t m = static_cast<uint32_t>(std::min<uint64_t>(n, 1u << 20));
  std::vector<uint32_t> positions(m);
  std::uniform_int_distribution<uint32_t> any(0, static_cast<uint32_t>(n - 1));
  for (uint32_t& p : positions) p = any(rng);
  std::sort(positions.begin(), positions.end());  // candidates arrive in docID order

  absl::StatusOr<gpu::DeviceBuffer<uint32_t>> d_image =
      gpu::DeviceBuffer<uint32_t>::Allocate(image->words.size());
  absl::StatusOr<gpu::DeviceBuffer<uint32_t>> d_pos = gpu::DeviceBuffer<uint32_t>::Allocate(m);
  absl::StatusOr<gpu::DeviceBuffer<uint32_t>> d_out = gpu::DeviceBuffer<uint32_t>::Allocate(m);
  if (!d_image.ok()) return d_image.status();
  if (!d_pos.ok()) return d_pos.status();
  if (!d_out.ok()) return d_out.status();
  if (absl::Status s = d_image->CopyFromHost(image->words.data(), image->words.size(), run.stream);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = d_pos->CopyFromHost(positions.data(), m, run.stream); !s.ok()) return s;
  const gpu::DeviceFreqList list{image->desc, d_image->data()};
  auto fetch = [&](int) {
    return gpu::FetchFreqs(list, d_pos->data(), m, d_out->data(), run.stream);
  };
  if (absl::Status s = fetch(0); !s.ok()) return s;
  std::vector<uint32_t> got(m);
  if (absl::Status s = d_out->CopyToHost(got.data(), m, run.stream); !s.ok()) return s;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(run.stream));
  bool verified = true;
  for (uint32_t t = 0; t < m; ++t) verified = verified && got[t] == freqs[positions[t]];
  if (!verified) ++run.failures;
  absl::StatusOr<Timing> t = TimeLaunches(fetch, 1, run.stream);
  if (!t.ok()) return t.status();
  std::printf(
      "freq  fetch %10llu postings, %8u positions: %8.2f us, %7.2f G fetches/s, %.2f bits/tf %s\n",
      static_cast<unsigned long long>(n), m, t->median * 1e6, m / t->median / 1e9,
      32.0 * image->words.size() / n, verified ? "ok" : "MISMATCH");
  return json{{"postings", n},
              {"positions", m},
              {"bit_width", image->desc.bit_width},
              {"exceptions", image->desc.num_exceptions},
              {"bits_per_frequency", 32.0 * image->words.size() / n},
              {"seconds", t->median},
              {"fetches_per_second", m / t->median},
              {"verified", verified}};
}

}  // namespace

int main(int argc, char** argv) {
  base::ParseCommandLineOrExit(
      argc, argv,
      bench::BenchApp(__FILE__, {"tandem-bench-gpu-decode", "[--json FILE]",
                                 "GPU PForDelta and Rice decode throughput by list length, every "
                                 "list checked against the CPU decoder."}));
  absl::StatusOr<gpu::DeviceInfo> info = gpu::ProbeDevice();
  if (!info.ok()) return Fail(info.status());
  absl::StatusOr<gpu::CudaStream> stream = gpu::CudaStream::Create();
  if (!stream.ok()) return Fail(stream.status());
  absl::StatusOr<DeviceFacts> device = ReadDevice(stream->get());
  if (!device.ok()) return Fail(device.status());
  std::printf("%s: %d SMs, %d MB L2, HBM peak %.0f GB/s (%d kHz x %d bits x 2), copy %.0f GB/s\n",
              device->name.c_str(), device->sms, device->l2_bytes >> 20,
              device->peak_bytes_per_second / 1e9, device->memory_clock_khz, device->bus_width_bits,
              device->copy_bytes_per_second / 1e9);

  std::vector<double> means;
  for (absl::string_view m : absl::StrSplit(absl::GetFlag(FLAGS_means), ',', absl::SkipEmpty())) {
    double v = 0;
    if (!absl::SimpleAtod(m, &v) || v < 1) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("bad --means entry '", m, "'")));
    }
    means.push_back(v);
  }
  std::vector<std::string> codecs =
      absl::StrSplit(absl::GetFlag(FLAGS_codecs), ',', absl::SkipEmpty());

  Run run{*device, stream->get()};
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  std::printf("\n%-5s %4s %6s %10s %-6s %3s %6s %11s %9s %9s %7s\n", "codec", "B", "mean",
              "postings", "output", "b", "bits", "us/list", "Gint/s", "bound", "%bound");
  for (double mean : means) {
    for (int log2 = absl::GetFlag(FLAGS_min_log2); log2 <= absl::GetFlag(FLAGS_max_log2); ++log2) {
      const uint64_t n = uint64_t{1} << log2;
      if (n * mean * 1.05 >= 4294967296.0) {
        std::printf("skip: %llu postings with mean gap %.1f overflow 32-bit docIDs\n",
                    static_cast<unsigned long long>(n), mean);
        continue;
      }
      const std::vector<uint32_t> docids =
          gpu::testing::DocidsFromGaps(gpu::testing::GeometricGaps(n, mean, rng));
      for (const std::string& codec : codecs) {
        Subject s;
        const absl::Time begin = absl::Now();
        absl::Status built;
        if (codec == "rice") {
          s.codec = "rice";
          s.block_size = gpu::kRiceBlock;
          absl::StatusOr<gpu::RiceImage> image = gpu::BuildRiceDocids(docids);
          built = image.status();
          if (image.ok()) s.rice = *std::move(image);
        } else if (codec == "pfor128" || codec == "pfor512") {
          s.codec = "pfor";
          s.block_size = codec == "pfor128" ? 128 : 512;
          gpu::PForOptions options;
          options.block_size = s.block_size;
          absl::StatusOr<gpu::PForImage> image = gpu::BuildPForDocids(docids, options);
          built = image.status();
          if (image.ok()) s.pfor = *std::move(image);
        } else {
          return Fail(absl::InvalidArgumentError(absl::StrCat("unknown codec '", codec, "'")));
        }
        if (!built.ok()) return Fail(built);
        const double build_seconds = absl::ToDoubleSeconds(absl::Now() - begin);
        if (absl::Status st = MeasureList(run, s, mean, n, build_seconds); !st.ok())
          return Fail(st);
      }
    }
  }

  json freq_rows = json::array();
  if (absl::GetFlag(FLAGS_freqs)) {
    std::printf("\n");
    for (uint64_t n : {uint64_t{1} << 20, uint64_t{1} << 24}) {
      if (n > (uint64_t{1} << absl::GetFlag(FLAGS_max_log2))) continue;
      absl::StatusOr<json> row = MeasureFreqFetch(run, n, rng);
      if (!row.ok()) return Fail(row.status());
      freq_rows.push_back(*row);
    }
  }

  // The target: every docID decode of a list over a million postings at >= 100 G docIDs/s.
  double slowest = 0;
  bool any = false;
  for (const json& r : run.rows) {
    if (r["output"] != "docids" || r["postings"].get<uint64_t>() <= kTargetMinPostings) continue;
    const double rate = r["ints_per_second"].get<double>();
    slowest = any ? std::min(slowest, rate) : rate;
    any = true;
  }
  std::printf("\ntarget >= %.0f G docIDs/s for lists over %llu postings: slowest %.1f G/s -> %s\n",
              kTargetDocidsPerSecond / 1e9, static_cast<unsigned long long>(kTargetMinPostings),
              slowest / 1e9,
              !any                                ? "not measured"
              : slowest >= kTargetDocidsPerSecond ? "met"
                                                  : "MISSED");
  if (run.failures > 0) std::printf("%d decodes did NOT match the CPU reference\n", run.failures);

  if (!absl::GetFlag(FLAGS_json).empty()) {
    json machine = base::MachineInfo(device->name);
    json out = {{"benchmark", "gpu_decode"},
                {"commit", tandem::base::Commit()},
                {"machine", machine},
                {"gpu",
                 {{"name", device->name},
                  {"sms", device->sms},
                  {"l2_bytes", device->l2_bytes},
                  {"memory_clock_khz", device->memory_clock_khz},
                  {"bus_width_bits", device->bus_width_bits},
                  {"peak_bytes_per_second", device->peak_bytes_per_second},
                  {"copy_bytes_per_second", device->copy_bytes_per_second}}},
                {"config",
                 {{"min_log2", absl::GetFlag(FLAGS_min_log2)},
                  {"max_log2", absl::GetFlag(FLAGS_max_log2)},
                  {"means", means},
                  {"codecs", codecs},
                  {"batch_ms", absl::GetFlag(FLAGS_batch_ms)},
                  {"batches", absl::GetFlag(FLAGS_batches)},
                  {"seed", absl::GetFlag(FLAGS_seed)},
                  {"gaps", "geometric, >= 1"},
                  {"timing", "median over batches of back-to-back launches, CUDA events"}}},
                {"decode", run.rows},
                {"freq_fetch", freq_rows},
                {"target",
                 {{"docids_per_second", kTargetDocidsPerSecond},
                  {"over_postings", kTargetMinPostings},
                  {"slowest_docids_per_second", slowest},
                  {"met", any && slowest >= kTargetDocidsPerSecond}}},
                {"mismatches", run.failures}};
    std::ofstream file(absl::GetFlag(FLAGS_json));
    file << out.dump(2) << "\n";
    if (!file) return Fail(absl::InternalError("cannot write " + absl::GetFlag(FLAGS_json)));
    std::printf("wrote %s\n", absl::GetFlag(FLAGS_json).c_str());
  }
  return run.failures == 0 ? 0 : 2;
}
