// File: live_queries.cc
//
// tandem-bench-live-queries: what writing costs the queries of a large index, on the CPU and on
// the GPU, side by side in one process. The index at --index is opened as a live index (it is
// written into: give it a scratch copy, e.g. the 25M-document GOV2-like index `tandem-index
// synth` builds), with the GPU engine of a node: segment "." on a GPU engine with the batch path,
// merged segments of at least --gpu_min_docs documents on their own, small fresh ones on the CPU.
//
// Protocol. The query log's first --max_queries queries, AND and OR top --k. For each engine and
// mode, --seconds of closed-loop queries: the CPU engine by --cpu_threads callers of Search (each
// query's latency), the GPU engine by --gpu_callers callers of SearchBatch over --batch_queries
// queries at a time (each batch's latency, as tandem-bench-gpu-batch). First on the index as
// built (static), then while a writer adds --write_rate documents a second (a Write every
// 10 ms of what the rate owes by then, each acknowledged once synced; every fifth a replace of a
// document of the index, so "." takes deletes), with a refresh every --refresh_interval and
// background merges. The documents' text is drawn from the index itself: each a document length
// of the index, its words terms of the lexicon drawn by document frequency. Then the writer stops,
// a refresh shows everything, and the first --check_queries queries of each mode are answered by
// the GPU engine (alone and batched) and compared with the CPU engine's answers on the same
// snapshot: the same documents in the same order with bit-equal scores.
//
//   tandem-bench-live-queries --index /tmp/gov2like --queries trec05-efficiency.txt --json out.json
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/bench_util.h"
#include "bench/bench_main.h"
#include "gpu/engine/gpu_engine.h"
#include "index/prepared_query.h"
#include "live/live_engine.h"
#include "live/live_index.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, index, "", "index directory, written into (required)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt; required)");
TANDEM_BENCH_SPLIT_FLAGS();
ABSL_FLAG(int, max_queries, 1000, "measure the first N chosen queries (0: all)");
ABSL_FLAG(uint32_t, k, 10, "hits per query");
ABSL_FLAG(double, seconds, 10, "seconds of queries per engine, mode and phase");
ABSL_FLAG(double, write_rate, 5000, "documents written a second while writing");
ABSL_FLAG(absl::Duration, refresh_interval, absl::Seconds(1), "the live index's refresh interval");
ABSL_FLAG(int, cpu_threads, 0, "callers of the CPU engine (0: all cores)");
ABSL_FLAG(int, gpu_callers, 2, "callers of the GPU engine's SearchBatch");
ABSL_FLAG(int, batch_queries, 256, "queries per SearchBatch call of the GPU engine");
ABSL_FLAG(uint32_t, gpu_min_docs, 1u << 20, "segments of at least this many documents on the GPU");
ABSL_FLAG(int, check_queries, 200, "queries per mode compared between the engines at the end");

namespace tandem {
namespace {

using nlohmann::json;

struct PhaseResult {
  double qps = 0;
  base::LatencySummary latency;  // of a query (CPU) or of a batch (GPU)
};

// --seconds of `engine` answering `queries` in a closed loop: `callers` threads, each taking the
// next `per_call` queries (one: Search; more: SearchBatch) in turn.
PhaseResult RunPhase(const index::Engine& engine, const std::vector<index::PreparedQuery>& queries,
                     int callers, size_t per_call, double seconds, std::atomic<int>& failures) {
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> answered{0};
  std::vector<std::vector<double>> latencies(callers);
  const auto start = bench::Clock::now();
  const auto stop = start + std::chrono::duration_cast<bench::Clock::duration>(
                                std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      std::vector<const index::PreparedQuery*> batch;
      while (bench::Clock::now() < stop) {
        batch.clear();
        for (size_t j = 0; j < per_call; ++j) {
          batch.push_back(&queries[next.fetch_add(1) % queries.size()]);
        }
        const auto t0 = bench::Clock::now();
        if (per_call == 1) {
          failures += !engine.Search(*batch[0], {}).ok();
        } else {
          for (const auto& r : engine.SearchBatch(batch, {index::SearchContext{}})) {
            failures += !r.ok();
          }
        }
        latencies[c].push_back(bench::Seconds(t0, bench::Clock::now()));
        answered += per_call;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  PhaseResult r;
  r.qps = static_cast<double>(answered) / bench::Seconds(start, bench::Clock::now());
  r.latency = base::Summarize(all);
  return r;
}

// The hits as (external id, score), resolved where the result says.
std::vector<std::pair<std::string, float>> Ranked(const index::SearchResult& r,
                                                  const index::Index& index) {
  std::vector<std::pair<std::string, float>> ranked;
  for (const index::Hit& h : r.hits) {
    ranked.emplace_back(
        r.documents != nullptr ? r.documents->external_id(h.docid) : index.external_id(h.docid),
        h.score);
  }
  return ranked;
}

// Adds `rate` documents a second to `live` until `stop`, every fifth a replace of a document the
// index was built with; the text drawn from the index's own lexicon and document lengths.
class Writer {
 public:
  Writer(live::LiveIndex& live, const index::Index& index, double rate)
      : live_(live), index_(index), rate_(rate) {
    std::vector<double> weights;
    for (uint64_t t = 0; t < index.num_terms(); ++t) {
      index::TermInfo info = index.term_at(t);
      terms_.push_back(info.term);
      weights.push_back(static_cast<double>(info.df));
    }
    term_ = std::discrete_distribution<size_t>(weights.begin(), weights.end());
    thread_ = std::thread([this] { Run(); });
  }
  ~Writer() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t written() const { return written_; }
  uint64_t failed() const { return failed_; }
  double seconds() const { return seconds_; }

 private:
  void Run() {
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<uint32_t> doc(0, index_.num_docs() - 1);
    const auto start = bench::Clock::now();
    auto tick = start;
    uint64_t fresh = 0, sent = 0;
    while (!stop_) {
      // What the rate owes by now: a Write slower than a tick carries more documents.
      const uint64_t due =
          static_cast<uint64_t>(rate_ * bench::Seconds(start, bench::Clock::now()));
      const int count = static_cast<int>(std::min<uint64_t>(due > sent ? due - sent : 0, 1000));
      sent += count;
      std::vector<live::Operation> ops;
      for (int i = 0; i < count; ++i) {
        index_builder::Document d;
        const uint32_t source = doc(rng);
        d.external_id = (written_ + i) % 5 == 4 ? std::string(index_.external_id(source))
                                                : absl::StrCat("new-", fresh++);
        std::vector<std::string> words;
        for (uint32_t w = std::max(1u, index_.doc_length(doc(rng))); w > 0; --w) {
          words.push_back(terms_[term_(rng)]);
        }
        d.text = absl::StrJoin(words, " ");
        ops.push_back(live::Operation::Index(std::move(d)));
      }
      absl::StatusOr<std::vector<absl::StatusOr<live::WriteOutcome>>> done =
          ops.empty() ? std::vector<absl::StatusOr<live::WriteOutcome>>{} : live_.Write(ops);
      if (done.ok()) {
        for (const auto& o : *done) (o.ok() ? written_ : failed_) += 1;
      } else {
        failed_ += ops.size();
      }
      tick += std::chrono::milliseconds(10);
      std::this_thread::sleep_until(tick);
    }
    seconds_ = bench::Seconds(start, bench::Clock::now());
  }

  live::LiveIndex& live_;
  const index::Index& index_;
  const double rate_;
  std::vector<std::string> terms_;
  std::discrete_distribution<size_t> term_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> written_{0}, failed_{0};
  double seconds_ = 0;
  std::thread thread_;
};

int Run() {
  const std::string dir = absl::GetFlag(FLAGS_index);
  if (dir.empty() || absl::GetFlag(FLAGS_queries).empty()) {
    return bench::Fail("--index and --queries are required");
  }
  absl::StatusOr<std::unique_ptr<index::Index>> opened = index::Index::Open(dir);
  if (!opened.ok()) return bench::Fail(opened.status().ToString());
  std::shared_ptr<const index::Index> index = *std::move(opened);
  auto selected = bench::SelectQueries(
      *index, {FLAGS_queries, FLAGS_split, FLAGS_seed, FLAGS_train, FLAGS_eval, FLAGS_max_queries});
  if (!selected.ok()) return bench::Fail(selected.status().message());

  gpu::GpuEngineOptions node;
  node.batch = {.enabled = true, .contexts = std::max(1, absl::GetFlag(FLAGS_gpu_callers))};
  absl::StatusOr<std::unique_ptr<gpu::GpuEngine>> gpu_engine = gpu::GpuEngine::Create(*index, node);
  if (!gpu_engine.ok()) return bench::Fail("gpu engine: " + gpu_engine.status().ToString());
  live::LiveIndexOptions options;
  options.opened = index;
  options.refresh_interval = absl::GetFlag(FLAGS_refresh_interval);
  options.device = {
      .create = [](const index::Index& segment) -> absl::StatusOr<std::unique_ptr<index::Engine>> {
        gpu::GpuEngineOptions o{.cache_within_free = true, .num_contexts = 2};
        o.cache_bytes = (uint64_t{64} << 20) + 12 * segment.stats().num_postings;
        o.batch = {.enabled = true, .contexts = 1, .scratch_bytes = 256u << 20};
        auto engine = gpu::GpuEngine::Create(segment, o);
        if (!engine.ok()) return engine.status();
        return std::unique_ptr<index::Engine>(*std::move(engine));
      },
      .min_docs = absl::GetFlag(FLAGS_gpu_min_docs),
      .opened = gpu_engine->get()};
  absl::StatusOr<std::unique_ptr<live::LiveIndex>> live_opened =
      live::LiveIndex::Open(dir, options);
  if (!live_opened.ok()) return bench::Fail(live_opened.status().ToString());
  std::shared_ptr<live::LiveIndex> live = *std::move(live_opened);
  const live::LiveEngine cpu(live, *index);
  const live::LiveEngine gpu(live, *index, live::LiveEngine::Where::kDevice);

  const index::QueryMode modes[] = {index::QueryMode::kAnd, index::QueryMode::kOr};
  std::vector<index::PreparedQuery> prepared[2];
  for (int m = 0; m < 2; ++m) {
    for (const workload::AnalyzedQuery& a : *selected) {
      index::Query q;
      q.mode = modes[m];
      q.k = absl::GetFlag(FLAGS_k);
      for (const std::string& t : a.terms) q.terms.push_back({t, 1.0f});
      absl::StatusOr<index::PreparedQuery> p = index::PreparedQuery::Prepare(*index, q);
      if (!p.ok()) return bench::Fail(p.status().ToString());
      prepared[m].push_back(*std::move(p));
    }
    // Warm: every list on the device.
    std::vector<const index::PreparedQuery*> all;
    for (const auto& p : prepared[m]) all.push_back(&p);
    (void)gpu.SearchBatch(all, {index::SearchContext{}});
  }

  const int cpu_threads = absl::GetFlag(FLAGS_cpu_threads) > 0
                              ? absl::GetFlag(FLAGS_cpu_threads)
                              : static_cast<int>(std::thread::hardware_concurrency());
  const int gpu_callers = std::max(1, absl::GetFlag(FLAGS_gpu_callers));
  const size_t batch = static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_batch_queries)));
  const double seconds = absl::GetFlag(FLAGS_seconds);
  std::atomic<int> failures{0};
  json out;
  out["benchmark"] = "live_queries";
  out["machine"] = base::MachineInfo((*gpu_engine)->device().name);
  out["index"] = {{"path", dir}, {"documents", index->num_docs()}};
  out["protocol"] = {
      {"queries", prepared[0].size()},
      {"k", absl::GetFlag(FLAGS_k)},
      {"seconds_per_phase", seconds},
      {"cpu_threads", cpu_threads},
      {"gpu_callers", gpu_callers},
      {"gpu_batch_queries", batch},
      {"write_rate", absl::GetFlag(FLAGS_write_rate)},
      {"refresh_interval_ms", absl::ToDoubleMilliseconds(absl::GetFlag(FLAGS_refresh_interval))},
      {"gpu_min_docs", absl::GetFlag(FLAGS_gpu_min_docs)}};
  std::printf(
      "index: %u docs; %zu queries, top %u; GPU %s; %d CPU callers, %d GPU callers of %zu\n",
      index->num_docs(), prepared[0].size(), absl::GetFlag(FLAGS_k),
      (*gpu_engine)->device().name.c_str(), cpu_threads, gpu_callers, batch);
  std::printf("\n%-4s %-4s %-8s %10s %9s %9s %s\n", "eng", "mode", "phase", "q/s", "p50_ms",
              "p99_ms", "(latency of a query on the CPU, of a batch on the GPU)");
  PhaseResult results[2][2][2];  // [engine][mode][phase]
  const char* engine_names[] = {"cpu", "gpu"};
  const char* phase_names[] = {"static", "writing"};
  // The table that finds a document of "." by its id, built before the writer's first replace.
  (void)live->snapshot()->Find("");
  std::unique_ptr<Writer> writer;
  for (int phase = 0; phase < 2; ++phase) {
    if (phase == 1)
      writer = std::make_unique<Writer>(*live, *index, absl::GetFlag(FLAGS_write_rate));
    for (int e = 0; e < 2; ++e) {
      for (int m = 0; m < 2; ++m) {
        PhaseResult& r = results[e][m][phase];
        r = e == 0 ? RunPhase(cpu, prepared[m], cpu_threads, 1, seconds, failures)
                   : RunPhase(gpu, prepared[m], gpu_callers, batch, seconds, failures);
        std::printf("%-4s %-4s %-8s %10.0f %9.3f %9.3f\n", engine_names[e],
                    index::QueryModeName(modes[m]).data(), phase_names[phase], r.qps,
                    r.latency.p50 * 1e3, r.latency.p99 * 1e3);
        out["results"][engine_names[e]][index::QueryModeName(modes[m])][phase_names[phase]] = {
            {"qps", r.qps}, {"p50_ms", r.latency.p50 * 1e3}, {"p99_ms", r.latency.p99 * 1e3}};
      }
    }
  }
  writer->Stop();
  const absl::Status refreshed = live->Refresh();
  if (!refreshed.ok()) return bench::Fail("refresh: " + refreshed.ToString());
  const live::LiveIndexStats stats = live->stats();
  const double docs_per_second = static_cast<double>(writer->written()) / writer->seconds();
  std::printf(
      "\nwriter: %lu documents acknowledged (%.0f/s), %lu refused; %lu refreshes, %lu "
      "segments, %lu merges, %lu deleted documents held\n",
      static_cast<unsigned long>(writer->written()), docs_per_second,
      static_cast<unsigned long>(writer->failed()), static_cast<unsigned long>(stats.refreshes),
      static_cast<unsigned long>(stats.segments), static_cast<unsigned long>(stats.merges),
      static_cast<unsigned long>(stats.deleted_documents));
  out["writer"] = {{"documents", writer->written()},
                   {"documents_per_second", docs_per_second},
                   {"refused", writer->failed()},
                   {"refreshes", stats.refreshes},
                   {"segments", stats.segments},
                   {"merges", stats.merges},
                   {"deleted_documents", stats.deleted_documents}};
  std::printf("\nwriting / static:\n");
  for (int e = 0; e < 2; ++e) {
    for (int m = 0; m < 2; ++m) {
      const PhaseResult& s = results[e][m][0];
      const PhaseResult& w = results[e][m][1];
      const double throughput = w.qps / s.qps, p99 = w.latency.p99 / s.latency.p99;
      std::printf("  %s %s: throughput %.2fx, p99 %.2fx\n", engine_names[e],
                  index::QueryModeName(modes[m]).data(), throughput, p99);
      out["ratios"][engine_names[e]][index::QueryModeName(modes[m])] = {{"throughput", throughput},
                                                                        {"p99", p99}};
    }
  }

  // The GPU's answers against the CPU's on the final snapshot.
  int mismatches = failures;
  int checked = 0;
  for (int m = 0; m < 2; ++m) {
    const size_t n = std::min<size_t>(prepared[m].size(), absl::GetFlag(FLAGS_check_queries));
    std::vector<const index::PreparedQuery*> some;
    for (size_t i = 0; i < n; ++i) some.push_back(&prepared[m][i]);
    const auto batched = gpu.SearchBatch(some, {index::SearchContext{}});
    for (size_t i = 0; i < n; ++i) {
      const auto want = cpu.Search(prepared[m][i], {});
      const auto alone = gpu.Search(prepared[m][i], {});
      // By external id: a background merge may renumber the snapshot between the calls.
      const bool same = want.ok() && alone.ok() && batched[i].ok() &&
                        Ranked(*want, *index) == Ranked(*alone, *index) &&
                        Ranked(*want, *index) == Ranked(*batched[i], *index);
      mismatches += same ? 0 : 1;
      ++checked;
    }
  }
  std::printf(
      "\n%d queries' GPU answers (alone and batched) compared with the CPU's on the "
      "written index; %d query failures while measuring\n",
      checked, failures.load());
  out["checked_queries"] = checked;
  out["failures"] = failures.load();
  out["mismatches"] = mismatches;
  return base::FinishCheckedRun(mismatches, out, absl::GetFlag(FLAGS_json));
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-live-queries",
                  "--index DIR --queries FILE [--write_rate 5000] [--json FILE]",
                  "query throughput and latency of a live index on the CPU and the GPU, static "
                  "and while writing, every GPU answer checked against the CPU's");
