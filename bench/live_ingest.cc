// File: live_ingest.cc
//
// tandem-bench-live-ingest: what a live index costs beside an offline build, on the machine it
// runs on, in one process.
//
//   (a) ingest: the Wikipedia sample replayed with fresh ids up to --bytes of text, written in
//       batches of --batch documents from --writers threads, each Write acknowledged once synced,
//       a refresh every second; documents/s, MB/s, MB per CPU second, Writes per fdatasync (group
//       commit) and Write latency, beside index_builder::BuildIndex over the same documents with
//       as many threads.
//   (b) visibility: the time from Write's return to Snapshot::Find seeing the document, at refresh
//       intervals of 1 s and 50 ms (polled every millisecond).
//   (c) queries while writing: the TREC 2005 efficiency queries, AND and OR top 10, on the live
//       index of (a) alone and beside a writer of --write-rate documents/s (adds, every fifth a
//       replace); then the first 100 queries' answers compared with a fresh build over the same
//       live documents.
//   --xapian: the same documents and queries through Xapian (live_ingest_xapian.h).
//
//   tandem-bench-live-ingest [--bytes 200000000] [--writers 2] [--xapian] [--json FILE]
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/bench_util.h"
#include "base/status_macros.h"
#include "base/temp_dir.h"
#include "bench/bench_main.h"
#include "index_builder/inverter.h"
#include "live/live_index.h"
#include "nlohmann/json.hpp"
#ifdef TANDEM_HAVE_XAPIAN
#include "bench/live_ingest_xapian.h"
#endif

ABSL_FLAG(std::string, wikipedia, "../shared/data/text/wikipedia",
          "the Wikipedia sample (WikiExtractor output)");
ABSL_FLAG(std::string, queries, "../shared/data/queries/trec05-efficiency.txt", "query log");
ABSL_FLAG(int, max_queries, 500, "queries measured (the first N of the split)");
TANDEM_BENCH_SPLIT_FLAGS();
ABSL_FLAG(uint64_t, bytes, 200000000, "text ingested, the sample replayed with fresh ids");
ABSL_FLAG(int, writers, 2, "writing threads, and the offline build's threads");
ABSL_FLAG(int, batch, 16, "documents per Write");
ABSL_FLAG(int, visibility_docs, 200, "documents written one per Write to time visibility");
ABSL_FLAG(double, visibility_rate, 100, "their rate, documents per second");
ABSL_FLAG(double, write_rate, 50, "documents per second of the writer beside the queries");
ABSL_FLAG(double, query_seconds, 5,
          "each query measurement runs passes over the queries this long");
ABSL_FLAG(int, check_queries, 100, "queries whose answers are compared with a fresh build");
ABSL_FLAG(bool, xapian, false, "also run Xapian on the same documents and queries");
ABSL_FLAG(std::string, dir, "", "scratch directory (default: a temporary one)");

// Every fdatasync of the process: the write-ahead log syncs with it (and the index files with
// fsync), so the count is the log's syncs, however many writers share each one.
static std::atomic<uint64_t> fdatasyncs{0};
extern "C" int fdatasync(int fd) {
  fdatasyncs.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(::syscall(SYS_fdatasync, fd));
}

namespace tandem {
namespace {

using bench::Clock;
using index_builder::Document;

double CpuSeconds() {
  rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double Since(Clock::time_point t) { return bench::Seconds(t, Clock::now()); }

// The sample, replayed: document i is article i % n under the id "w<i>"; a replace of id i takes
// the text of article i + 1.
class Corpus {
 public:
  std::vector<std::string> texts;
  void Make(size_t i, Document* d, size_t shift = 0) const {
    d->Clear();
    d->external_id = absl::StrCat("w", i);
    d->text = texts[(i + shift) % texts.size()];
  }
};

class CorpusReader : public index_builder::DocumentReader {
 public:
  // Documents [0, n), or the ids of `ids` with the articles `shifts` names.
  CorpusReader(const Corpus& corpus, size_t n) : corpus_(corpus), n_(n) {}
  CorpusReader(const Corpus& corpus, std::vector<std::pair<size_t, size_t>> ids)
      : corpus_(corpus), n_(ids.size()), ids_(std::move(ids)) {}
  absl::StatusOr<bool> Next(Document* doc) override {
    if (next_ == n_) return false;
    if (ids_.empty()) {
      corpus_.Make(next_++, doc);
    } else {
      corpus_.Make(ids_[next_].first, doc, ids_[next_].second);
      ++next_;
    }
    return true;
  }

 private:
  const Corpus& corpus_;
  size_t n_ = 0;
  std::vector<std::pair<size_t, size_t>> ids_;
  size_t next_ = 0;
};

absl::StatusOr<index_builder::BuildSummary> Build(index_builder::DocumentReader& reader,
                                                  const std::string& dir, int threads) {
  index_builder::InverterOptions options;
  options.threads = threads;
  return index_builder::BuildIndex(reader, dir, {}, options);
}

// A live index over a seed of 10 documents ("w" ids from `first`), as a node's would start from
// an index built offline.
absl::StatusOr<std::unique_ptr<live::LiveIndex>> OpenLive(const Corpus& corpus,
                                                          const std::string& dir, size_t first,
                                                          const live::LiveIndexOptions& options) {
  std::vector<std::pair<size_t, size_t>> seed;
  for (size_t i = 0; i < 10; ++i) seed.emplace_back(first + i, 0);
  CorpusReader reader(corpus, seed);
  if (auto built = Build(reader, dir, 1); !built.ok()) return built.status();
  return live::LiveIndex::Open(dir, options);
}

nlohmann::json Latencies(std::vector<double> seconds) {
  const base::LatencySummary s = base::Summarize(seconds);
  return {{"p50_ms", s.p50 * 1e3}, {"p99_ms", s.p99 * 1e3}, {"max_ms", s.max * 1e3}};
}

// (b): single-document Writes at a fixed rate; a poller looks each one up in every new snapshot.
absl::StatusOr<nlohmann::json> Visibility(const Corpus& corpus, const std::string& dir,
                                          absl::Duration interval) {
  live::LiveIndexOptions options;
  options.refresh_interval = interval;
  const size_t first = 1u << 30;  // ids apart from (a)'s
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<live::LiveIndex> live_index,
                          OpenLive(corpus, dir, first, options));
  const int n = absl::GetFlag(FLAGS_visibility_docs);
  std::vector<Clock::time_point> returned(n);
  std::atomic<int> written{0};
  absl::Status failed;  // the writer's, read once it is joined
  std::atomic<bool> write_failed{false};
  std::thread writer([&] {
    const Clock::time_point t0 = Clock::now();
    Document d;
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_until(
          t0 + std::chrono::duration<double>(i / absl::GetFlag(FLAGS_visibility_rate)));
      corpus.Make(first + 10 + i, &d);
      auto outcomes = live_index->Write({live::Operation::Index(d)});
      returned[i] = Clock::now();
      if (!outcomes.ok() && !write_failed.exchange(true)) failed = outcomes.status();
      written.store(i + 1, std::memory_order_release);
    }
  });
  std::vector<double> seconds;
  std::vector<bool> seen(n, false);
  uint64_t generation = ~uint64_t{0};
  for (int found = 0; found < n && !write_failed.load();) {
    std::shared_ptr<const live::Snapshot> snapshot = live_index->snapshot();
    const int upto = written.load(std::memory_order_acquire);
    if (snapshot->generation() != generation) {
      for (int i = 0; i < upto; ++i) {
        if (seen[i] || !snapshot->Find(absl::StrCat("w", first + 10 + i))) continue;
        seen[i] = true;
        seconds.push_back(std::max(0.0, Since(returned[i])));
        ++found;
      }
      // A generation is done with once every document written before it was looked up.
      if (upto == written.load(std::memory_order_acquire)) generation = snapshot->generation();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  writer.join();
  TANDEM_RETURN_IF_ERROR(failed);
  nlohmann::json out = Latencies(seconds);
  out["refresh_interval_ms"] = absl::ToDoubleMilliseconds(interval);
  out["documents"] = n;
  return out;
}

struct QueryRun {
  std::vector<std::vector<std::string>> terms;  // distinct, analyzed
};

index::Query MakeQuery(const std::vector<std::string>& terms, index::QueryMode mode) {
  index::Query q;
  for (const std::string& t : terms) q.terms.push_back({t, 1.0f});
  q.mode = mode;
  q.k = 10;
  return q;
}

int Run() {
  const int writers = absl::GetFlag(FLAGS_writers);
  const int batch = absl::GetFlag(FLAGS_batch);
  if (writers < 1 || batch < 1 || absl::GetFlag(FLAGS_bytes) == 0) {
    return bench::Fail("--writers, --batch and --bytes must be at least 1");
  }
  // The queries are chosen against the offline build of (a); a missing log fails before it.
  if (std::error_code ec; !std::filesystem::is_regular_file(absl::GetFlag(FLAGS_queries), ec)) {
    return bench::Fail(absl::StrCat("no query log at '", absl::GetFlag(FLAGS_queries), "'"));
  }
  base::TempDir temp;
  const std::string dir = absl::GetFlag(FLAGS_dir).empty() ? temp.path() : absl::GetFlag(FLAGS_dir);
  std::filesystem::create_directories(dir);

  // The sample, in memory before anything is timed.
  Corpus corpus;
  uint64_t sample_bytes = 0;
  {
    index_builder::ReaderOptions options;
    options.threads = 2;
    auto reader =
        index_builder::OpenDocumentReader("wikiextractor", absl::GetFlag(FLAGS_wikipedia), options);
    if (!reader.ok()) return bench::Fail(reader.status().ToString());
    Document d;
    while (true) {
      absl::StatusOr<bool> more = (*reader)->Next(&d);
      if (!more.ok()) return bench::Fail(more.status().ToString());
      if (!*more) break;
      sample_bytes += d.text.size();
      corpus.texts.push_back(std::move(d.text));
    }
  }
  if (corpus.texts.empty()) return bench::Fail("the Wikipedia sample holds no document");
  size_t documents = 0;
  uint64_t text_bytes = 0;
  while (text_bytes < absl::GetFlag(FLAGS_bytes)) {
    text_bytes += corpus.texts[documents++ % corpus.texts.size()].size();
  }
  std::printf("sample: %zu articles, %.1f MB; ingest: %zu documents, %.1f MB, %d writers\n",
              corpus.texts.size(), sample_bytes / 1e6, documents, text_bytes / 1e6, writers);
  nlohmann::json out = {{"benchmark", "live_ingest"}, {"machine", base::MachineInfo()},
                        {"documents", documents},     {"text_bytes", text_bytes},
                        {"writers", writers},         {"batch", batch}};

  // (a) The offline build, then the live ingest, of the same documents.
  double offline_seconds = 0, offline_cpu = 0;
  {
    CorpusReader reader(corpus, documents);
    const double cpu0 = CpuSeconds();
    const Clock::time_point t0 = Clock::now();
    auto built = Build(reader, dir + "/offline", writers);
    if (!built.ok()) return bench::Fail(built.status().ToString());
    offline_seconds = Since(t0);
    offline_cpu = CpuSeconds() - cpu0;
  }
  live::LiveIndexOptions options;
  options.refresh_interval = absl::Seconds(1);
  options.build_threads = writers;
  const size_t seed_first = 1u << 31;
  auto opened = OpenLive(corpus, dir + "/live", seed_first, options);
  if (!opened.ok()) return bench::Fail(opened.status().ToString());
  std::unique_ptr<live::LiveIndex> live_index = *std::move(opened);
  std::vector<std::vector<double>> write_seconds(writers);
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  const uint64_t syncs0 = fdatasyncs.load();
  const double cpu0 = CpuSeconds();
  const Clock::time_point t0 = Clock::now();
  {
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        std::vector<live::Operation> ops;
        for (size_t first = next.fetch_add(batch); first < documents;
             first = next.fetch_add(batch)) {
          ops.clear();
          for (size_t i = first; i < std::min(documents, first + batch); ++i) {
            Document d;
            corpus.Make(i, &d);
            ops.push_back(live::Operation::Index(std::move(d)));
          }
          const Clock::time_point s = Clock::now();
          if (!live_index->Write(ops).ok()) ++failures;
          write_seconds[w].push_back(Since(s));
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  if (absl::Status s = live_index->Refresh(); !s.ok() || failures > 0) {
    return bench::Fail(
        absl::StrCat("the live ingest failed: ", failures.load(), " Writes, ", s.ToString()));
  }
  const double live_seconds = Since(t0), live_cpu = CpuSeconds() - cpu0;
  const uint64_t syncs = fdatasyncs.load() - syncs0;
  std::vector<double> all_writes;
  for (const auto& v : write_seconds) all_writes.insert(all_writes.end(), v.begin(), v.end());
  const size_t write_calls = all_writes.size();
  const live::LiveIndexStats stats = live_index->stats();
  const double mb = text_bytes / 1e6;
  std::printf("\n%-8s %10s %10s %8s %12s\n", "ingest", "seconds", "docs/s", "MB/s", "MB/CPU s");
  std::printf("%-8s %10.1f %10.0f %8.2f %12.2f\n", "offline", offline_seconds,
              documents / offline_seconds, mb / offline_seconds, mb / offline_cpu);
  std::printf("%-8s %10.1f %10.0f %8.2f %12.2f\n", "live", live_seconds, documents / live_seconds,
              mb / live_seconds, mb / live_cpu);
  std::printf(
      "live/offline throughput %.2f; %zu Writes, %llu fdatasyncs (%.2f Writes each), "
      "%llu refreshes, %llu segments\n",
      offline_seconds / live_seconds, write_calls, static_cast<unsigned long long>(syncs),
      syncs > 0 ? static_cast<double>(write_calls) / syncs : 0.0,
      static_cast<unsigned long long>(stats.refreshes),
      static_cast<unsigned long long>(stats.segments));
  nlohmann::json write_latency = Latencies(all_writes);
  std::printf("Write latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
              write_latency["p50_ms"].get<double>(), write_latency["p99_ms"].get<double>(),
              write_latency["max_ms"].get<double>());
  out["ingest"] = {{"offline",
                    {{"seconds", offline_seconds},
                     {"cpu_seconds", offline_cpu},
                     {"docs_per_second", documents / offline_seconds},
                     {"mb_per_second", mb / offline_seconds},
                     {"mb_per_cpu_second", mb / offline_cpu}}},
                   {"live",
                    {{"seconds", live_seconds},
                     {"cpu_seconds", live_cpu},
                     {"docs_per_second", documents / live_seconds},
                     {"mb_per_second", mb / live_seconds},
                     {"mb_per_cpu_second", mb / live_cpu},
                     {"writes", write_calls},
                     {"fdatasyncs", syncs},
                     {"writes_per_fdatasync", syncs > 0 ? double(write_calls) / syncs : 0.0},
                     {"refreshes", stats.refreshes},
                     {"segments", stats.segments},
                     {"write_latency", write_latency}}},
                   {"live_over_offline_throughput", offline_seconds / live_seconds}};

  // (b) Visibility.
  std::printf("\n%-18s %10s %10s %10s\n", "visibility", "p50 ms", "p99 ms", "max ms");
  for (const absl::Duration interval : {absl::Seconds(1), absl::Milliseconds(50)}) {
    absl::StatusOr<nlohmann::json> v = Visibility(
        corpus, absl::StrCat(dir, "/visibility", absl::ToInt64Milliseconds(interval)), interval);
    if (!v.ok()) return bench::Fail(v.status().ToString());
    std::printf("refresh %-10s %10.1f %10.1f %10.1f\n", absl::FormatDuration(interval).c_str(),
                (*v)["p50_ms"].get<double>(), (*v)["p99_ms"].get<double>(),
                (*v)["max_ms"].get<double>());
    out["visibility"].push_back(*v);
  }

  // (c) Queries on the live index of (a), alone and beside a writer.
  absl::StatusOr<std::unique_ptr<index::Index>> offline_index =
      index::Index::Open(dir + "/offline");
  if (!offline_index.ok()) return bench::Fail(offline_index.status().ToString());
  auto selected = bench::SelectQueries(
      **offline_index,
      {FLAGS_queries, FLAGS_split, FLAGS_seed, FLAGS_train, FLAGS_eval, FLAGS_max_queries});
  if (!selected.ok()) return bench::Fail(selected.status().message());
  std::vector<std::vector<std::string>> queries;
  std::vector<std::string> query_texts;
  for (const workload::AnalyzedQuery& q : *selected) {
    queries.push_back(workload::DistinctTerms(q.terms));
    query_texts.push_back(q.text);
  }
  offline_index->reset();
  std::filesystem::remove_all(dir + "/offline");
  // What the writer replaced: id -> the article shift its text has.
  absl::flat_hash_map<size_t, size_t> replaced;
  size_t appended = 0;
  const double rate = absl::GetFlag(FLAGS_write_rate);
  std::printf("\n%-4s %-8s %10s %10s %10s\n", "mode", "writer", "q/s", "p50 ms", "p99 ms");
  for (const bool writing : {false, true}) {
    std::atomic<bool> stop{false};
    std::thread writer;
    if (writing) {
      writer = std::thread([&] {
        const Clock::time_point w0 = Clock::now();
        for (size_t n = 0; !stop.load(); ++n) {
          Document d;
          if (n % 5 == 0) {
            const size_t id = n * 7 % documents;
            corpus.Make(id, &d, 1);
            replaced[id] = 1;
          } else {
            corpus.Make(documents + appended++, &d);
          }
          if (!live_index->Write({live::Operation::Index(std::move(d))}).ok()) ++failures;
          std::this_thread::sleep_until(w0 + std::chrono::duration<double>((n + 1) / rate));
        }
      });
    }
    for (const index::QueryMode mode : {index::QueryMode::kAnd, index::QueryMode::kOr}) {
      // Passes over the queries for at least --query-seconds, each on the newest snapshot.
      std::vector<double> latencies;
      const Clock::time_point q0 = Clock::now();
      do {
        for (const auto& terms : queries) {
          const Clock::time_point s = Clock::now();
          if (!live_index->snapshot()->Search(MakeQuery(terms, mode), {}).ok()) ++failures;
          latencies.push_back(Since(s));
        }
      } while (Since(q0) < absl::GetFlag(FLAGS_query_seconds));
      const double elapsed = Since(q0), qps = latencies.size() / elapsed;
      nlohmann::json l = Latencies(latencies);
      l["queries_per_second"] = qps;
      l["queries"] = latencies.size();
      const std::string name(index::QueryModeName(mode));
      std::printf("%-4s %-8s %10.0f %10.3f %10.3f\n", name.c_str(), writing ? "writing" : "idle",
                  qps, l["p50_ms"].get<double>(), l["p99_ms"].get<double>());
      out["queries"][writing ? "writing" : "idle"][name] = l;
    }
    stop = true;
    if (writer.joinable()) writer.join();
  }
  if (failures > 0) return bench::Fail(absl::StrCat(failures.load(), " Writes or queries failed"));
  for (const char* mode : {"and", "or"}) {
    const nlohmann::json& idle = out["queries"]["idle"][mode];
    const nlohmann::json& busy = out["queries"]["writing"][mode];
    out["queries"]["writing_over_idle"][mode] = {
        {"throughput",
         busy["queries_per_second"].get<double>() / idle["queries_per_second"].get<double>()},
        {"p99", busy["p99_ms"].get<double>() / idle["p99_ms"].get<double>()}};
    std::printf("%s while writing %.0f docs/s: throughput x%.2f, p99 x%.2f\n", mode, rate,
                out["queries"]["writing_over_idle"][mode]["throughput"].get<double>(),
                out["queries"]["writing_over_idle"][mode]["p99"].get<double>());
  }
  out["queries"]["write_rate"] = rate;
  out["queries"]["count"] = queries.size();

  // The answers against a fresh build over the live documents, in snapshot order.
  if (absl::Status s = live_index->Refresh(); !s.ok()) return bench::Fail(s.ToString());
  std::shared_ptr<const live::Snapshot> snapshot = live_index->snapshot();
  std::vector<std::pair<size_t, size_t>> live_docs;
  for (uint32_t d = 0; d < snapshot->docid_limit(); ++d) {
    auto [view, local] = snapshot->Locate(d);
    if (view->is_deleted(local)) continue;
    size_t id = 0;
    if (!absl::SimpleAtoi(snapshot->external_id(d).substr(1), &id)) return bench::Fail("an id");
    auto it = replaced.find(id);
    live_docs.emplace_back(id, it == replaced.end() ? 0 : it->second);
  }
  CorpusReader fresh_reader(corpus, live_docs);
  if (auto built = Build(fresh_reader, dir + "/fresh", writers); !built.ok()) {
    return bench::Fail(built.status().ToString());
  }
  auto fresh = live::Segment::Open(dir + "/fresh", "fresh", {});
  if (!fresh.ok()) return bench::Fail(fresh.status().ToString());
  int checked = 0, equal = 0;
  const size_t check = std::min<size_t>(queries.size(), absl::GetFlag(FLAGS_check_queries));
  for (size_t q = 0; q < check; ++q) {
    for (const index::QueryMode mode : {index::QueryMode::kAnd, index::QueryMode::kOr}) {
      auto got = snapshot->Search(MakeQuery(queries[q], mode), {});
      auto want = (*fresh)->engine().Search(MakeQuery(queries[q], mode), {});
      ++checked;
      if (!got.ok() || !want.ok() || got->hits.size() != want->hits.size()) continue;
      bool same = true;
      for (size_t h = 0; h < got->hits.size(); ++h) {
        same = same &&
               snapshot->external_id(got->hits[h].docid) ==
                   (*fresh)->index().external_id(want->hits[h].docid) &&
               got->hits[h].score == want->hits[h].score;
      }
      equal += same;
    }
  }
  std::printf("answers equal to a fresh build over the %zu live documents: %d of %d\n",
              live_docs.size(), equal, checked);
  out["check"] = {{"live_documents", live_docs.size()}, {"answers", checked}, {"equal", equal}};
  live_index.reset();

#ifdef TANDEM_HAVE_XAPIAN
  if (absl::GetFlag(FLAGS_xapian)) {
    std::printf("\n");
    bench::XapianSideOptions x;
    x.dir = dir + "/xapian";
    x.documents = documents;
    x.document = [&](size_t i, Document* d) { corpus.Make(i, d); };
    x.queries = query_texts;
    x.write_rate = rate;
    x.query_seconds = absl::GetFlag(FLAGS_query_seconds);
    absl::StatusOr<nlohmann::json> xapian = bench::RunXapianSide(x);
    if (!xapian.ok()) return bench::Fail(xapian.status().ToString());
    out["xapian"] = *xapian;
  }
#else
  if (absl::GetFlag(FLAGS_xapian)) return bench::Fail("built without Xapian (xapian-core)");
#endif
  base::WriteJson(absl::GetFlag(FLAGS_json), out);
  return equal == checked ? 0 : 2;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-live-ingest",
                  "[--bytes N] [--writers N] [--batch N] [--write-rate R] [--xapian] [--json FILE]",
                  "live ingest of real text beside the offline build, visibility after a write, "
                  "and queries while writing.");
