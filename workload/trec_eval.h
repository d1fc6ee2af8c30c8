// File: trec_eval.h
//
// Relevance judgments, topics and the effectiveness measures of trec_eval, so Tandem's figures
// compare with published ones (Anserini reports `trec_eval -c -m ndcg_cut.10 -m map -m
// recall.100`):
//   * the run is ranked as trec_eval ranks it: score descending, ties by document id descending;
//   * every judged query counts (-c): a query with no hits scores 0;
//   * nDCG@10 uses the judgment grade as gain (grades <= 0 give nothing), log2(rank + 1) discount;
//   * MAP and R@100 count a document relevant when its grade is > 0.
//
// Loaders accept the files in ../shared/data and the same files from their official homes:
// TREC qrels (`qid 0 docid grade`), 3-column qrels (`qid docid grade`: Cranfield, MED), CISI.REL
// (`qid docid 0 0.0`), NPL rlv-ass (numbered blocks ending with `/`); topics as SMART (`.I n` /
// `.W` blocks), NPL (numbered blocks ending with `/`) or any line format of index/query_file.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::workload {

// qid -> docid -> grade.
using Qrels = std::map<std::string, std::map<std::string, int>>;

struct Topic {
  std::string id;
  std::string text;
};

enum class TopicIds {
  kGiven,    // the id in the file
  kOrdinal,  // 1, 2, 3, ... in file order (Cranfield's qrels number its 225 queries this way)
};

absl::StatusOr<Qrels> LoadQrels(const std::string& path);
absl::StatusOr<std::vector<Topic>> LoadTopics(const std::string& path,
                                              TopicIds ids = TopicIds::kGiven);

struct RankedDoc {
  std::string docid;
  float score;
};

struct QueryMeasures {
  double ndcg10 = 0;
  double average_precision = 0;  // over the run as given (truncate it to 1000 for MAP@1000)
  double recall100 = 0;
};

// Measures of one query. `run` in any order; it is re-ranked like trec_eval.
QueryMeasures Evaluate(const std::map<std::string, int>& judgments, std::vector<RankedDoc> run);

struct Measures {
  int queries = 0;  // judged queries with at least one relevant document
  double ndcg10 = 0;
  double map = 0;
  double recall100 = 0;
};

// Means over every judged query with a relevant document; queries missing from `runs` score 0.
Measures EvaluateAll(const Qrels& qrels, const std::map<std::string, std::vector<RankedDoc>>& runs);

}  // namespace tandem::workload
