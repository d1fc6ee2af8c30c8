// tandem-query-profile: what a query set asks of an index, so reports can set our workloads beside
// GOV2's (about 3.74 million postings per query in Ding et al. 2009, section 6).
//
// For the chosen queries: distinct index terms per query; postings per query (the summed lengths of
// its lists: mean, median, p99); the distribution of the shortest list; how many queries have an
// empty AND over their index terms (computed with the CPU cursors) and how many name a term the
// index lacks (the engine's AND is then empty too).
//
// The pool is the file's queries with at least one index term, in file order. --split all takes its
// first --max-queries; train and eval take the seeded split of index/query_split.h.
//
//   tandem-query-profile --index /tmp/gov2like --queries trec05-efficiency.txt --json profile.json
//   tandem-query-profile --index /tmp/gov2like --queries trec05-efficiency.txt --split eval --seed
//   1
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/thread_pool.h"
#include "cpu/cursor.h"
#include "index/index.h"
#include "workload/query_set.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, index, "", "index directory");
ABSL_FLAG(std::string, queries, "", "query log (id:query, id:priority:query, TSV or one per line)");
ABSL_FLAG(std::string, split, "all", "all (the first --max_queries of the pool), train or eval");
ABSL_FLAG(uint64_t, seed, tandem::workload::kDefaultSplitSeed, "seed of the train/eval split");
ABSL_FLAG(uint64_t, train, tandem::workload::kDefaultTrainQueries, "training queries");
ABSL_FLAG(uint64_t, eval, tandem::workload::kDefaultEvalQueries, "evaluation queries");
ABSL_FLAG(uint64_t, max_queries, 10000, "--split all: the first N queries of the pool (0: all)");
ABSL_FLAG(bool, intersect, true, "compute every query's AND (decodes the lists)");
ABSL_FLAG(int, threads, 0, "threads for the ANDs (0: all cores)");
ABSL_FLAG(uint64_t, scale_to_docs, 25000000,
          "also print postings per query scaled to this many documents (0: no)");
ABSL_FLAG(std::string, json, "", "write the profile here");
ABSL_FLAG(std::string, write_queries, "", "write the chosen queries here (id<TAB>text)");

namespace {
using namespace tandem;

constexpr double kGov2PostingsPerQuery = 3.74e6;  // Ding et al. 2009, section 6

struct ProfiledQuery {
  const workload::AnalyzedQuery* query = nullptr;
  std::vector<index::TermInfo> terms;  // distinct index terms
  bool has_unknown = false;
  uint64_t postings = 0;
  uint64_t shortest = 0;
  uint64_t and_size = 0;
};

int Fail(absl::string_view message) {
  std::fprintf(stderr, "tandem-query-profile: %s\n", std::string(message).c_str());
  return 1;
}

// Size of the AND of the lists, led by the shortest (next_geq on the others).
absl::StatusOr<uint64_t> CountAnd(const index::Index& idx, std::vector<index::TermInfo> terms) {
  std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.df < b.df; });
  std::vector<cpu::Cursor> cursors;
  cursors.reserve(terms.size());
  for (const index::TermInfo& t : terms) {
    absl::StatusOr<index::PostingListView> list = idx.postings(t);
    if (!list.ok()) return list.status();
    cursors.emplace_back(*list, idx.codec(), nullptr);
  }
  uint64_t count = 0;
  uint32_t d = cursors[0].docid();
  while (d != cpu::Cursor::kEnd) {
    uint32_t next = d;
    for (size_t k = 1; k < cursors.size() && next == d; ++k) {
      cursors[k].next_geq(d);
      next = cursors[k].docid();
    }
    if (next == d) {
      ++count;
      cursors[0].next();
    } else {
      cursors[0].next_geq(next);
    }
    d = cursors[0].docid();
  }
  for (const cpu::Cursor& c : cursors) {
    if (!c.status().ok()) return c.status();
  }
  return count;
}

// "[1e3, 1e4)" style decade bucket of n >= 1.
int Decade(uint64_t n) {
  int d = 0;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  base::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-query-profile",
       .usage = "tandem-query-profile profiles a query set against an index.\n"
                "  tandem-query-profile --index DIR --queries FILE "
                "[--split all|train|eval --seed S --train 3000 "
                "--eval 1000] [--json FILE]",
       .main_file = __FILE__});
  absl::StatusOr<std::unique_ptr<index::Index>> opened =
      index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!opened.ok()) return Fail(opened.status().message());
  const index::Index& idx = **opened;
  const std::string query_file = absl::GetFlag(FLAGS_queries);
  absl::StatusOr<std::vector<workload::AnalyzedQuery>> queries =
      workload::LoadQuerySet(query_file, idx.analyzer());
  if (!queries.ok()) return Fail(queries.status().message());
  absl::StatusOr<workload::SplitPart> part = workload::ParseSplitPart(absl::GetFlag(FLAGS_split));
  if (!part.ok()) return Fail(part.status().message());

  // The pool: queries with at least one index term.
  std::vector<ProfiledQuery> pool;
  for (const workload::AnalyzedQuery& q : *queries) {
    ProfiledQuery p;
    p.query = &q;
    for (const std::string& t : workload::DistinctTerms(q.terms)) {
      std::optional<index::TermInfo> info = idx.Lookup(t);
      if (info) {
        p.terms.push_back(*info);
      } else {
        p.has_unknown = true;
      }
    }
    if (!p.terms.empty()) pool.push_back(std::move(p));
  }
  std::vector<ProfiledQuery> chosen;
  if (*part == workload::SplitPart::kAll) {
    const uint64_t limit = absl::GetFlag(FLAGS_max_queries);
    const size_t n = limit == 0 ? pool.size() : std::min<size_t>(pool.size(), limit);
    chosen.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(n));
  } else {
    absl::StatusOr<workload::QuerySplit> split =
        workload::SplitQueries(pool.size(), absl::GetFlag(FLAGS_seed), absl::GetFlag(FLAGS_train),
                               absl::GetFlag(FLAGS_eval));
    if (!split.ok()) return Fail(split.status().message());
    for (size_t i : *part == workload::SplitPart::kTrain ? split->train : split->eval)
      chosen.push_back(pool[i]);
  }
  if (chosen.empty()) return Fail("no query has a term in the index");

  for (ProfiledQuery& p : chosen) {
    p.shortest = UINT64_MAX;
    for (const index::TermInfo& t : p.terms) {
      p.postings += t.df;
      p.shortest = std::min<uint64_t>(p.shortest, t.df);
    }
  }
  const bool intersect = absl::GetFlag(FLAGS_intersect);
  if (intersect) {
    base::ThreadPool threads(absl::GetFlag(FLAGS_threads));
    std::atomic<bool> failed{false};
    for (ProfiledQuery& p : chosen) {
      threads.Schedule([&idx, &p, &failed] {
        absl::StatusOr<uint64_t> n = CountAnd(idx, p.terms);
        if (n.ok()) {
          p.and_size = *n;
        } else {
          failed = true;
        }
      });
    }
    threads.Wait();
    if (failed) return Fail("a posting list failed to decode (run tandem-index inspect)");
  }

  // Figures.
  const size_t n = chosen.size();
  std::vector<double> postings, terms_per_query, and_sizes;
  std::vector<uint64_t> terms_hist(6, 0), shortest_hist(11, 0);
  uint64_t empty_and = 0, with_unknown = 0;
  std::vector<std::string> distinct;
  for (const ProfiledQuery& p : chosen) {
    postings.push_back(static_cast<double>(p.postings));
    terms_per_query.push_back(static_cast<double>(p.terms.size()));
    and_sizes.push_back(static_cast<double>(p.and_size));
    ++terms_hist[std::min<size_t>(p.terms.size(), 5)];
    ++shortest_hist[std::min(Decade(p.shortest), 10)];
    empty_and += p.and_size == 0 ? 1 : 0;
    with_unknown += p.has_unknown ? 1 : 0;
    for (const index::TermInfo& t : p.terms) distinct.emplace_back(t.term);
  }
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  uint64_t distinct_postings = 0;
  for (const std::string& t : distinct) distinct_postings += idx.Lookup(t)->df;
  const base::LatencySummary pp = base::Summarize(postings);
  const base::LatencySummary tq = base::Summarize(terms_per_query);
  const base::LatencySummary as = base::Summarize(and_sizes);
  const double per_doc_scale =
      absl::GetFlag(FLAGS_scale_to_docs) > 0
          ? static_cast<double>(absl::GetFlag(FLAGS_scale_to_docs)) / idx.num_docs()
          : 0;

  std::printf("index        %s: %u documents, %llu terms, %llu postings\n", idx.directory().c_str(),
              idx.num_docs(), static_cast<unsigned long long>(idx.stats().num_terms),
              static_cast<unsigned long long>(idx.stats().num_postings));
  std::printf("queries      %s: %zu read, %zu with an index term; profiled %zu (split %s)\n",
              query_file.c_str(), queries->size(), pool.size(), n,
              absl::GetFlag(FLAGS_split).c_str());
  std::printf("terms        %zu distinct in these queries, %.3fB postings; %.3f per query\n",
              distinct.size(), distinct_postings / 1e9, tq.mean);
  std::printf("             queries with 1/2/3/4/5+ terms: %llu/%llu/%llu/%llu/%llu\n",
              static_cast<unsigned long long>(terms_hist[1]),
              static_cast<unsigned long long>(terms_hist[2]),
              static_cast<unsigned long long>(terms_hist[3]),
              static_cast<unsigned long long>(terms_hist[4]),
              static_cast<unsigned long long>(terms_hist[5]));
  std::printf("postings/q   mean %.3fM, median %.3fM, p99 %.3fM, max %.3fM (GOV2: %.2fM mean)\n",
              pp.mean / 1e6, pp.p50 / 1e6, pp.p99 / 1e6, pp.max / 1e6, kGov2PostingsPerQuery / 1e6);
  if (per_doc_scale > 0 && per_doc_scale != 1.0) {
    std::printf(
        "             scaled to %llu documents (linear in N): mean %.3fM, median %.3fM, p99 "
        "%.3fM\n",
        static_cast<unsigned long long>(absl::GetFlag(FLAGS_scale_to_docs)),
        pp.mean * per_doc_scale / 1e6, pp.p50 * per_doc_scale / 1e6, pp.p99 * per_doc_scale / 1e6);
  }
  std::printf("shortest     list per query, by decade:");
  for (int d = 0; d < 11; ++d) {
    if (shortest_hist[d] > 0)
      std::printf(" [1e%d,1e%d) %.1f%%", d, d + 1, 100.0 * shortest_hist[d] / n);
  }
  std::printf("\n");
  if (intersect) {
    std::printf(
        "AND          empty for %llu of %zu queries (%.1f%%); result size mean %.0f, median %.0f\n",
        static_cast<unsigned long long>(empty_and), n, 100.0 * empty_and / n, as.mean, as.p50);
  }
  std::printf("unknown      %llu queries name a term the index lacks (the engine's AND is empty)\n",
              static_cast<unsigned long long>(with_unknown));

  nlohmann::json shortest_json = nlohmann::json::object();
  for (int d = 0; d < 11; ++d) {
    if (shortest_hist[d] > 0) shortest_json[absl::StrFormat("1e%d", d)] = shortest_hist[d];
  }
  nlohmann::json out = {{"benchmark", "query_profile"},
                        {"machine", base::MachineInfo()},
                        {"index",
                         {{"path", idx.directory()},
                          {"documents", idx.num_docs()},
                          {"terms", idx.stats().num_terms},
                          {"postings", idx.stats().num_postings},
                          {"source", idx.manifest().source_input}}},
                        {"queries",
                         {{"file", query_file},
                          {"read", queries->size()},
                          {"pool", pool.size()},
                          {"profiled", n},
                          {"split", absl::GetFlag(FLAGS_split)},
                          {"seed", absl::GetFlag(FLAGS_seed)}}},
                        {"distinct_terms", distinct.size()},
                        {"distinct_terms_postings", distinct_postings},
                        {"terms_per_query", tq.mean},
                        {"terms_per_query_histogram", terms_hist},
                        {"postings_per_query",
                         {{"mean", pp.mean}, {"median", pp.p50}, {"p99", pp.p99}, {"max", pp.max}}},
                        {"scaled_to_documents", absl::GetFlag(FLAGS_scale_to_docs)},
                        {"postings_per_query_scaled",
                         {{"mean", pp.mean * per_doc_scale},
                          {"median", pp.p50 * per_doc_scale},
                          {"p99", pp.p99 * per_doc_scale}}},
                        {"shortest_list_by_decade", shortest_json},
                        {"queries_with_unknown_terms", with_unknown},
                        {"gov2_postings_per_query", kGov2PostingsPerQuery}};
  if (intersect) {
    out["empty_and"] = empty_and;
    out["and_size"] = {{"mean", as.mean}, {"median", as.p50}, {"p99", as.p99}};
  }
  base::WriteJson(absl::GetFlag(FLAGS_json), out);
  if (!absl::GetFlag(FLAGS_write_queries).empty()) {
    std::ofstream w(absl::GetFlag(FLAGS_write_queries));
    for (const ProfiledQuery& p : chosen) w << p.query->id << '\t' << p.query->text << '\n';
    if (!w) return Fail("cannot write --write_queries file");
  }
  return 0;
}
