#include "bench/live_ingest_xapian.h"

#include <sys/resource.h>
#include <xapian.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/bench_util.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class Indexer {
 public:
  Indexer() {
    generator_.set_stemmer(Xapian::Stem("english"));
    generator_.set_stemming_strategy(Xapian::TermGenerator::STEM_ALL);
  }
  // The document's terms as the query's: the same generator turns both into terms.
  Xapian::Document Make(const index_builder::Document& d) {
    Xapian::Document doc;
    generator_.set_document(doc);
    generator_.index_text_without_positions(d.text);
    doc.add_boolean_term("Q" + d.external_id);
    return doc;
  }
  std::vector<std::string> Terms(const std::string& text) {
    Xapian::Document doc;
    generator_.set_document(doc);
    generator_.index_text_without_positions(text);
    return {doc.termlist_begin(), doc.termlist_end()};
  }

 private:
  Xapian::TermGenerator generator_;
};

}  // namespace

absl::StatusOr<nlohmann::json> RunXapianSide(const XapianSideOptions& options) {
  try {
    Indexer indexer;
    Xapian::WritableDatabase db(options.dir, Xapian::DB_CREATE_OR_OVERWRITE);
    // Ingest: replace_document by id, a commit every second.
    index_builder::Document d;
    uint64_t bytes = 0, commits = 0;
    const double cpu_start = CpuSeconds();
    const Clock::time_point start = Clock::now();
    Clock::time_point last_commit = start;
    for (size_t i = 0; i < options.documents; ++i) {
      options.document(i, &d);
      bytes += d.text.size();
      db.replace_document("Q" + d.external_id, indexer.Make(d));
      if (Since(last_commit) >= 1.0) {
        db.commit();
        ++commits;
        last_commit = Clock::now();
      }
    }
    db.commit();
    ++commits;
    const double seconds = Since(start), cpu = CpuSeconds() - cpu_start;
    nlohmann::json out = {{"documents", options.documents},
                          {"text_bytes", bytes},
                          {"seconds", seconds},
                          {"cpu_seconds", cpu},
                          {"docs_per_second", options.documents / seconds},
                          {"mb_per_second", bytes / 1e6 / seconds},
                          {"mb_per_cpu_second", bytes / 1e6 / cpu},
                          {"commits", commits}};
    std::printf("xapian ingest: %zu documents, %.1f MB in %.1f s: %.1f MB/s, %.2f MB per CPU s\n",
                options.documents, bytes / 1e6, seconds, bytes / 1e6 / seconds, bytes / 1e6 / cpu);

    std::vector<std::vector<std::string>> queries;
    for (const std::string& q : options.queries) queries.push_back(indexer.Terms(q));
    // Queries with and without a writer that adds and replaces at a fixed rate, committing every
    // second; the reader reopens before each query to see the newest commit.
    for (const bool writing : {false, true}) {
      std::atomic<bool> stop{false};
      std::thread writer;
      if (writing) {
        writer = std::thread([&] {
          Indexer w;
          index_builder::Document doc;
          const Clock::time_point t0 = Clock::now();
          Clock::time_point committed = t0;
          for (size_t n = 0; !stop.load(); ++n) {
            const size_t i =
                n % options.replace_every == 0 ? n * 7 % options.documents : options.documents + n;
            options.document(i, &doc);
            db.replace_document("Q" + doc.external_id, w.Make(doc));
            if (Since(committed) >= 1.0) {
              db.commit();
              committed = Clock::now();
            }
            std::this_thread::sleep_until(
                t0 + std::chrono::duration<double>((n + 1) / options.write_rate));
          }
          db.commit();
        });
      }
      Xapian::Database reader(options.dir);
      for (const Xapian::Query::op op : {Xapian::Query::OP_AND, Xapian::Query::OP_OR}) {
        std::vector<double> latencies;
        const Clock::time_point t = Clock::now();
        do {
          for (const std::vector<std::string>& terms : queries) {
            const Clock::time_point q0 = Clock::now();
            reader.reopen();
            Xapian::Enquire enquire(reader);
            enquire.set_query(Xapian::Query(op, terms.begin(), terms.end()));
            enquire.set_weighting_scheme(Xapian::BM25Weight());
            Xapian::MSet top = enquire.get_mset(0, 10);
            (void)top.size();
            latencies.push_back(Since(q0));
          }
        } while (Since(t) < options.query_seconds);
        const double elapsed = Since(t);
        const size_t ran = latencies.size();
        const base::LatencySummary s = base::Summarize(latencies);
        const std::string mode = op == Xapian::Query::OP_AND ? "and" : "or";
        out["queries"][writing ? "writing" : "idle"][mode] = {{"queries", ran},
                                                              {"queries_per_second", ran / elapsed},
                                                              {"p50_ms", s.p50 * 1e3},
                                                              {"p99_ms", s.p99 * 1e3}};
        std::printf("xapian %-3s %-7s %8.0f q/s  p50 %7.3f ms  p99 %7.3f ms\n", mode.c_str(),
                    writing ? "writing" : "idle", ran / elapsed, s.p50 * 1e3, s.p99 * 1e3);
      }
      stop = true;
      if (writer.joinable()) writer.join();
    }
    return out;
  } catch (const Xapian::Error& e) {
    return absl::InternalError(absl::StrCat("xapian: ", e.get_description()));
  }
}

}  // namespace tandem::bench
