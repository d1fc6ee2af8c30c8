// tandem-bench-gpu-codecs: the GPU list codecs side by side on an index's query lists, the paper's
// Figures 7 and 8 (Ao et al. 2011, section 5.1.2):
//   - Figure 7: compression ratio, the lists' size uncompressed (32 bits a docID) over their size
//     compressed with every auxiliary array (bases, headers, segment records), for GPU PForDelta
//     (Ding et al. 2009, blocks of 128 and 512), GPU Rice, ParaPFor by the cap on its share of
//     exceptions (0 to 0.6) and with the width of the smallest block, LRC, LRCSeg, SegLRC (segments
//     of 256) and HS-LRC (HS256). Over the lists of every distinct term of the queries.
//   - Figure 8: decompression speed of each query's shortest list, the list the batch path decodes
//     whole (the others are searched): one launch per list in query order, captured into a CUDA
//     graph and replayed, timed with CUDA events (the median of --repeat runs), in docIDs per
//     second; and the same for the --longest longest lists, where memory rather than launches
//     bounds the decoding.
// Every list is built from the index's own decoding and every device decode is compared with it
// before the timing. Prints a table and writes JSON with the machine, the commit and the GPU.
//
//   tandem-bench-gpu-codecs --index DIR --queries trec05-efficiency.txt --json out.json
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/thread_pool.h"
#include "bench/bench_main.h"
#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/layouts/decode.h"
#include "gpu/layouts/list_layout.h"
#include "index/index.h"
#include "index/resolved_query.h"
#include "nlohmann/json.hpp"
#include "workload/query_set.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, index, "", "index directory (required)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt; required)");
TANDEM_BENCH_SPLIT_FLAGS();
ABSL_FLAG(int, max_queries, 1000, "the first N chosen queries (0: all)");
ABSL_FLAG(int, repeat, 5, "timed runs of Figure 8; the median is reported");
ABSL_FLAG(int, longest, 16, "also time the decoding of the N longest lists of the queries");
ABSL_FLAG(int, threads, 0, "host threads building the layouts (0: all cores)");

namespace tandem {
namespace {

using nlohmann::json;

using Image = std::variant<gpu::PForImage, gpu::RiceImage, gpu::ParaPForImage, gpu::LrcImage>;

// One codec and its parameters, as a row of the figures.
struct Codec {
  std::string name;
  std::string family;           // pfor, rice, parapfor, lrc
  double exception_share = -1;  // ParaPFor's cap; < 0: none
  absl::StatusOr<Image> Build(const std::vector<uint32_t>& docids) const;
};

template <typename T>
absl::StatusOr<Image> AsImage(absl::StatusOr<T> built) {
  if (!built.ok()) return built.status();
  return Image(*std::move(built));
}

absl::StatusOr<Image> Codec::Build(const std::vector<uint32_t>& docids) const {
  if (name == "pfor128" || name == "pfor512") {
    gpu::PForOptions o;
    o.block_size = name == "pfor128" ? 128 : 512;
    return AsImage(gpu::BuildPForDocids(docids, o));
  }
  if (name == "rice") return AsImage(gpu::BuildRiceDocids(docids));
  if (family == "parapfor") {
    gpu::ParaPForOptions o;
    if (exception_share >= 0) o.max_exception_share = exception_share;
    return AsImage(gpu::BuildParaPForDocids(docids, o));
  }
  gpu::LrcOptions o;
  o.kind = name == "lrc"      ? gpu::LrcKind::kLrc
           : name == "lrcseg" ? gpu::LrcKind::kLrcSeg
           : name == "seglrc" ? gpu::LrcKind::kSegLrc
                              : gpu::LrcKind::kHsLrc;
  return AsImage(gpu::BuildLrcDocids(docids, o));
}

std::vector<Codec> AllCodecs() {
  std::vector<Codec> codecs = {{"pfor128", "pfor"}, {"pfor512", "pfor"}, {"rice", "rice"}};
  for (int tenths = 0; tenths <= 6; ++tenths) {
    codecs.push_back({absl::StrFormat("parapfor-e%.1f", tenths / 10.0), "parapfor", tenths / 10.0});
  }
  codecs.push_back({"parapfor", "parapfor"});
  for (const char* lrc : {"lrc", "lrcseg", "seglrc", "hslrc"}) codecs.push_back({lrc, "lrc"});
  return codecs;
}

uint64_t ImageWords(const Image& image) {
  return std::visit([](const auto& i) { return i.desc.image_words; }, image);
}
const std::vector<uint32_t>& ImageData(const Image& image) {
  return std::visit([](const auto& i) -> const std::vector<uint32_t>& { return i.words; }, image);
}

// One launch decoding the whole list at `d_image` into `out`.
absl::Status Decode(const Image& image, const uint32_t* d_image, uint32_t* out,
                    cudaStream_t stream) {
  using gpu::DecodeOutput;
  if (const auto* p = std::get_if<gpu::PForImage>(&image)) {
    return gpu::DecodePForList({p->desc, d_image}, DecodeOutput::kDocids, out, stream);
  }
  if (const auto* r = std::get_if<gpu::RiceImage>(&image)) {
    return gpu::DecodeRiceList({r->desc, d_image}, DecodeOutput::kDocids, out, stream);
  }
  if (const auto* q = std::get_if<gpu::ParaPForImage>(&image)) {
    return gpu::DecodeParaPForList({q->desc, d_image}, DecodeOutput::kDocids, out, stream);
  }
  return gpu::DecodeLrcList({std::get<gpu::LrcImage>(image).desc, d_image}, out, stream);
}

absl::StatusOr<std::vector<uint32_t>> Docids(const index::Index& index,
                                             const index::TermInfo& term) {
  absl::StatusOr<index::PostingListView> view = index.postings(term);
  if (!view.ok()) return view.status();
  std::vector<uint32_t> docids(uint64_t{view->num_blocks()} * index::kBlockSize);
  for (uint32_t k = 0; k < view->num_blocks(); ++k) {
    if (absl::Status s =
            view->DecodeDocids(index.codec(), k, docids.data() + k * index::kBlockSize);
        !s.ok()) {
      return s;
    }
  }
  docids.resize(view->num_postings());
  return docids;
}

int Run() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto idx = index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!idx.ok()) return bench::Fail("open index: " + idx.status().ToString());
  const index::Index& index = **idx;
  auto selected = bench::SelectQueries(
      index, {FLAGS_queries, FLAGS_split, FLAGS_seed, FLAGS_train, FLAGS_eval, FLAGS_max_queries});
  if (!selected.ok()) return bench::Fail(selected.status().message());
  auto device = gpu::ProbeDevice();
  if (!device.ok()) return bench::Fail("no CUDA device: " + device.status().ToString());
  auto stream = gpu::CudaStream::Create();
  if (!stream.ok()) return bench::Fail(stream.status().ToString());

  // The distinct terms of the queries (Figure 7) and each query's shortest list (Figure 8).
  std::map<uint64_t, index::TermInfo> terms;  // by ordinal
  std::vector<uint64_t> shortest;             // per query, a term ordinal
  for (const workload::AnalyzedQuery& q : *selected) {
    index::Query query;
    for (const std::string& t : q.terms) query.terms.push_back({t, 1.0f});
    const index::ResolvedQuery r = index::ResolveQuery(index, query);
    const index::ResolvedTerm* least = nullptr;
    for (const index::ResolvedTerm& t : r.terms) {
      terms.emplace(t.info.ordinal, t.info);
      if (least == nullptr || t.info.df < least->info.df) least = &t;
    }
    if (least != nullptr) shortest.push_back(least->info.ordinal);
  }
  // The lists whose images are kept for Figure 8: each query's shortest, and the --longest longest
  // lists of the queries, whose decoding is bound by memory rather than by launches.
  std::vector<uint64_t> longest;
  {
    std::vector<std::pair<uint32_t, uint64_t>> by_length;
    for (const auto& [o, info] : terms) by_length.push_back({info.df, o});
    std::sort(by_length.rbegin(), by_length.rend());
    by_length.resize(std::min<size_t>(by_length.size(), absl::GetFlag(FLAGS_longest)));
    for (const auto& [df, o] : by_length) longest.push_back(o);
  }
  std::map<uint64_t, size_t> kept_slot;  // term ordinal -> its slot among the kept lists
  for (uint64_t o : shortest) kept_slot.emplace(o, 0);
  for (uint64_t o : longest) kept_slot.emplace(o, 0);
  {
    size_t slot = 0;
    for (auto& [o, s] : kept_slot) s = slot++;
  }

  const std::vector<Codec> codecs = AllCodecs();
  struct Totals {
    uint64_t words = 0;
    std::vector<Image> kept_images;  // by slot
  };
  std::vector<Totals> totals(codecs.size());
  for (Totals& t : totals) t.kept_images.resize(kept_slot.size());
  std::vector<std::vector<uint32_t>> kept_docids(kept_slot.size());
  uint64_t postings = 0;
  std::mutex mu;
  absl::Status failure;
  {
    base::ThreadPool pool(static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_threads))));
    for (const auto& [ordinal, info] : terms) {
      pool.Schedule([&, ordinal = ordinal, info = info] {
        absl::StatusOr<std::vector<uint32_t>> docids = Docids(index, info);
        std::vector<uint64_t> words(codecs.size());
        std::vector<std::optional<Image>> kept(codecs.size());
        const auto slot = kept_slot.find(ordinal);
        absl::Status status = docids.status();
        for (size_t c = 0; status.ok() && c < codecs.size(); ++c) {
          absl::StatusOr<Image> image = codecs[c].Build(*docids);
          if (!image.ok()) {
            status = absl::InternalError(absl::StrFormat("%s of '%s': %s", codecs[c].name,
                                                         info.term, image.status().message()));
            break;
          }
          words[c] = ImageWords(*image);
          if (slot != kept_slot.end()) kept[c] = *std::move(image);
        }
        std::lock_guard<std::mutex> lock(mu);
        if (!status.ok()) {
          failure = status;
          return;
        }
        postings += docids->size();
        for (size_t c = 0; c < codecs.size(); ++c) {
          totals[c].words += words[c];
          if (kept[c]) totals[c].kept_images[slot->second] = *std::move(kept[c]);
        }
        if (slot != kept_slot.end()) kept_docids[slot->second] = *std::move(docids);
      });
    }
    pool.Wait();
  }
  if (!failure.ok()) return bench::Fail(failure.ToString());

  uint64_t shortest_postings = 0, longest_postings = 0;
  for (uint64_t o : shortest) shortest_postings += kept_docids[kept_slot[o]].size();
  for (uint64_t o : longest) longest_postings += kept_docids[kept_slot[o]].size();
  std::printf(
      "index: %u docs, %s codec; %zu %s queries, %zu distinct terms, %lu postings; "
      "shortest lists: %lu postings over %zu queries; %zu longest: %lu postings; GPU %s\n",
      index.num_docs(), index.manifest().codec.c_str(), selected->size(),
      absl::GetFlag(FLAGS_split).c_str(), terms.size(), static_cast<unsigned long>(postings),
      static_cast<unsigned long>(shortest_postings), shortest.size(), longest.size(),
      static_cast<unsigned long>(longest_postings), device->name.c_str());
  std::printf("\n%-14s %8s %11s %13s %11s %13s %7s\n", "codec", "ratio", "bits/docID", "short G/s",
              "us/list", "long G/s", "diff");

  json rows = json::array();
  int total_mismatches = 0;
  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat));
  size_t max_length = 0;
  for (const auto& d : kept_docids) max_length = std::max(max_length, d.size());
  auto out = gpu::DeviceBuffer<uint32_t>::Allocate(max_length + 4);
  if (!out.ok()) return bench::Fail(out.status().ToString());
  for (size_t c = 0; c < codecs.size(); ++c) {
    // Every shortest list's image, each at a 16-byte boundary of one device buffer.
    std::vector<uint64_t> at(kept_slot.size());
    uint64_t words = 0;
    for (size_t s = 0; s < at.size(); ++s) {
      at[s] = words;
      words += gpu::AlignedWords(ImageWords(totals[c].kept_images[s]));
    }
    auto d_images = gpu::DeviceBuffer<uint32_t>::Allocate(words);
    if (!d_images.ok()) return bench::Fail(d_images.status().ToString());
    for (size_t s = 0; s < at.size(); ++s) {
      const std::vector<uint32_t>& data = ImageData(totals[c].kept_images[s]);
      if (cudaMemcpy(d_images->data() + at[s], data.data(), data.size() * 4,
                     cudaMemcpyHostToDevice) != cudaSuccess) {
        return bench::Fail("copy to the device failed");
      }
    }
    // Correctness first: every list decoded once and compared.
    int mismatches = 0;
    std::vector<uint32_t> host(max_length);
    for (size_t s = 0; s < at.size(); ++s) {
      const std::vector<uint32_t>& want = kept_docids[s];
      absl::Status st =
          Decode(totals[c].kept_images[s], d_images->data() + at[s], out->data(), stream->get());
      if (st.ok()) st = out->CopyToHost(host.data(), want.size(), stream->get());
      if (st.ok()) st = stream->Synchronize();
      if (!st.ok()) return bench::Fail(codecs[c].name + ": " + st.ToString());
      mismatches += !std::equal(want.begin(), want.end(), host.begin());
    }
    total_mismatches += mismatches;
    // Figure 8: one launch per list, in query order, captured once into a CUDA graph and replayed,
    // so that the host's launch rate does not bound the lists of a few thousand postings.
    auto time_lists = [&](const std::vector<uint64_t>& ordinals) -> absl::StatusOr<double> {
      cudaGraph_t graph = nullptr;
      TANDEM_CUDA_RETURN_IF_ERROR(
          cudaStreamBeginCapture(stream->get(), cudaStreamCaptureModeThreadLocal));
      absl::Status launched;
      for (uint64_t o : ordinals) {
        const size_t s = kept_slot[o];
        launched =
            Decode(totals[c].kept_images[s], d_images->data() + at[s], out->data(), stream->get());
        if (!launched.ok()) break;
      }
      TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream->get(), &graph));
      if (!launched.ok()) {
        cudaGraphDestroy(graph);
        return launched;
      }
      cudaGraphExec_t exec = nullptr;
      const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      TANDEM_CUDA_RETURN_IF_ERROR(made);
      std::vector<double> runs;
      absl::Status st;
      for (int r = 0; st.ok() && r < repeat + 1; ++r) {  // the first run warms up
        auto start = gpu::CudaEvent::Create();
        auto stop = gpu::CudaEvent::Create();
        st = start.ok() ? stop.status() : start.status();
        if (st.ok()) st = start->Record(stream->get());
        if (st.ok() && cudaGraphLaunch(exec, stream->get()) != cudaSuccess) {
          st = absl::InternalError("graph launch failed");
        }
        if (st.ok()) st = stop->Record(stream->get());
        absl::StatusOr<float> ms = st.ok() ? stop->MillisecondsSince(*start) : st;
        if (!ms.ok()) st = ms.status();
        if (st.ok() && r > 0) runs.push_back(*ms / 1e3);
      }
      cudaGraphExecDestroy(exec);
      if (!st.ok()) return st;
      std::sort(runs.begin(), runs.end());
      return runs[runs.size() / 2];
    };
    absl::StatusOr<double> short_seconds = time_lists(shortest);
    absl::StatusOr<double> long_seconds = time_lists(longest);
    if (!short_seconds.ok()) return bench::Fail(short_seconds.status().ToString());
    if (!long_seconds.ok()) return bench::Fail(long_seconds.status().ToString());
    const double median = *short_seconds;
    const double ratio = double(postings) / totals[c].words;
    const double rate = shortest_postings / median;
    const double long_rate = longest_postings / *long_seconds;
    std::printf("%-14s %8.3f %11.2f %13.2f %11.2f %13.2f %7d\n", codecs[c].name.c_str(), ratio,
                32.0 / ratio, rate / 1e9, median / shortest.size() * 1e6, long_rate / 1e9,
                mismatches);
    rows.push_back({{"codec", codecs[c].name},
                    {"family", codecs[c].family},
                    {"exception_share_cap", codecs[c].exception_share},
                    {"compression_ratio", ratio},
                    {"bits_per_docid", 32.0 / ratio},
                    {"compressed_words", totals[c].words},
                    {"shortest_decode_docids_per_second", rate},
                    {"shortest_decode_seconds_median", median},
                    {"shortest_decode_us_per_list", median / shortest.size() * 1e6},
                    {"longest_decode_docids_per_second", long_rate},
                    {"longest_decode_seconds_median", *long_seconds},
                    {"mismatched_lists", mismatches}});
  }

  json result;
  result["benchmark"] = "gpu_codecs";
  result["figures"] = "Ao et al. 2011, Figures 7 (compression ratio) and 8 (decompression speed)";
  result["machine"] = base::MachineInfo(device->name);
  result["index"] = {{"path", absl::GetFlag(FLAGS_index)},
                     {"documents", index.num_docs()},
                     {"codec", index.manifest().codec}};
  result["queries"] = {{"file", absl::GetFlag(FLAGS_queries)},
                       {"split", absl::GetFlag(FLAGS_split)},
                       {"count", selected->size()},
                       {"distinct_terms", terms.size()},
                       {"postings", postings},
                       {"shortest_list_postings", shortest_postings},
                       {"longest_lists", longest.size()},
                       {"longest_list_postings", longest_postings}};
  result["repeat"] = repeat;
  result["rows"] = rows;
  base::WriteJson(absl::GetFlag(FLAGS_json), result);
  if (total_mismatches > 0)
    return bench::Fail(absl::StrFormat("%d lists decoded wrong", total_mismatches));
  return 0;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-gpu-codecs",
                  "--index DIR --queries FILE [--json FILE]",
                  "compression ratio and GPU decompression speed of every GPU list "
                  "codec on an index's query lists (Ao et al. 2011, Figures 7-8).");
