// tandem-eval: runs a topic file against an index and prints nDCG@10, MAP and R@100 computed like
// trec_eval (bench/trec_eval.h), optionally writing a TREC run file and a JSON summary.
//
//   tandem-eval --index DIR --queries FILE --qrels FILE [--mode and|or|andor] [--k 1000] [--run
//   FILE]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/app.h"
#include "base/thread_pool.h"
#include "cpu/daat_engine.h"
#include "index/index.h"
#include "nlohmann/json.hpp"
#include "workload/trec_eval.h"

ABSL_FLAG(std::string, index, "", "index directory");
ABSL_FLAG(std::string, queries, "",
          "topics: 'qid<TAB>text', 'qid:text', SMART (.I/.W) or NPL blocks");
ABSL_FLAG(std::string, qrels, "",
          "judgments: TREC 'qid 0 docid grade', 'qid docid grade', CISI.REL or NPL blocks");
ABSL_FLAG(std::string, mode, "or", "and, or, andor");
ABSL_FLAG(int, k, 1000, "hits per query (MAP is computed over these)");
ABSL_FLAG(std::string, run, "", "write a TREC run file here");
ABSL_FLAG(std::string, json, "", "write the measures as JSON here");
ABSL_FLAG(bool, ordinal_ids, false,
          "number topics 1, 2, 3... in file order (Cranfield's qrels do)");
ABSL_FLAG(int, threads, 0, "query threads (0: all cores)");
ABSL_FLAG(float, k1, 0.9f, "BM25 k1");
ABSL_FLAG(float, b, 0.4f, "BM25 b");

namespace {

int Fail(absl::string_view what) {
  std::fprintf(stderr, "tandem-eval: %s\n", std::string(what).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem;
  base::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-eval",
       .usage = "tandem-eval measures ranking quality (trec_eval's measures) on judged topics.\n"
                "  tandem-eval --index DIR --queries FILE --qrels FILE "
                "[--mode and|or|andor] [--k 1000] [--run FILE]",
       .main_file = __FILE__});
  if (absl::GetFlag(FLAGS_index).empty() || absl::GetFlag(FLAGS_queries).empty() ||
      absl::GetFlag(FLAGS_qrels).empty()) {
    return Fail("needs --index, --queries and --qrels");
  }
  index::QueryMode mode;
  if (!index::ParseQueryMode(absl::GetFlag(FLAGS_mode), &mode)) {
    return Fail(absl::StrCat("unknown --mode '", absl::GetFlag(FLAGS_mode), "' (and, or, andor)"));
  }
  auto idx = index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!idx.ok()) return Fail(idx.status().message());
  auto topics = workload::LoadTopics(
      absl::GetFlag(FLAGS_queries),
      absl::GetFlag(FLAGS_ordinal_ids) ? workload::TopicIds::kOrdinal : workload::TopicIds::kGiven);
  if (!topics.ok()) return Fail(topics.status().message());
  auto qrels = workload::LoadQrels(absl::GetFlag(FLAGS_qrels));
  if (!qrels.ok()) return Fail(qrels.status().message());
  auto engine = cpu::DaatEngine::Create(**idx);
  if (!engine.ok()) return Fail(engine.status().message());

  std::map<std::string, std::vector<workload::RankedDoc>> runs;
  std::mutex mu;
  absl::Status first_error;
  const auto start = std::chrono::steady_clock::now();
  {
    base::ThreadPool pool(absl::GetFlag(FLAGS_threads));
    for (const workload::Topic& topic : *topics) {
      pool.Schedule([&, topic] {
        index::Query q;
        q.mode = mode;
        q.k = static_cast<uint32_t>(absl::GetFlag(FLAGS_k));
        q.bm25 = {absl::GetFlag(FLAGS_k1), absl::GetFlag(FLAGS_b)};
        std::vector<std::string> terms;
        (*idx)->analyzer().Analyze(topic.text, &terms);
        for (std::string& t : terms) q.terms.push_back({std::move(t), 1.0f});
        absl::StatusOr<index::SearchResult> r = (*engine)->Search(q, {});
        std::lock_guard<std::mutex> lock(mu);
        if (!r.ok()) {
          if (first_error.ok()) first_error = r.status();
          return;
        }
        std::vector<workload::RankedDoc>& run = runs[topic.id];
        for (const index::Hit& h : r->hits) {
          run.push_back({std::string((*idx)->external_id(h.docid)), h.score});
        }
      });
    }
  }
  if (!first_error.ok()) return Fail(first_error.message());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!absl::GetFlag(FLAGS_run).empty()) {
    std::ofstream out(absl::GetFlag(FLAGS_run));
    for (const workload::Topic& topic : *topics) {
      const auto& run = runs[topic.id];
      for (size_t r = 0; r < run.size(); ++r) {
        out << topic.id << " Q0 " << run[r].docid << ' ' << r + 1 << ' ' << run[r].score
            << " tandem\n";
      }
    }
    if (!out) return Fail(absl::StrCat("cannot write run file '", absl::GetFlag(FLAGS_run), "'"));
  }
  workload::Measures m = workload::EvaluateAll(*qrels, runs);
  std::printf("topics %zu, judged %d, mode %s, k %d, %.2f s\n", topics->size(), m.queries,
              std::string(index::QueryModeName(mode)).c_str(), absl::GetFlag(FLAGS_k), seconds);
  std::printf("nDCG@10   %.4f\nMAP@%-5d %.4f\nR@100     %.4f\n", m.ndcg10, absl::GetFlag(FLAGS_k),
              m.map, m.recall100);
  if (!absl::GetFlag(FLAGS_json).empty()) {
    nlohmann::json j = {{"index", absl::GetFlag(FLAGS_index)},
                        {"queries", absl::GetFlag(FLAGS_queries)},
                        {"qrels", absl::GetFlag(FLAGS_qrels)},
                        {"mode", std::string(index::QueryModeName(mode))},
                        {"k", absl::GetFlag(FLAGS_k)},
                        {"topics", topics->size()},
                        {"judged_topics", m.queries},
                        {"ndcg_cut_10", m.ndcg10},
                        {"map", m.map},
                        {"recall_100", m.recall100},
                        {"seconds", seconds}};
    std::ofstream(absl::GetFlag(FLAGS_json)) << j.dump(2) << "\n";
  }
  return 0;
}
