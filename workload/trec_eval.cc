#include "workload/trec_eval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "workload/query_file.h"

namespace tandem::workload {
namespace {

absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> Fields(const std::string& line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

bool IsNumber(absl::string_view s) {
  int64_t v;
  return absl::SimpleAtoi(s, &v);
}

}  // namespace

absl::StatusOr<Qrels> LoadQrels(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  Qrels qrels;
  // NPL rlv-ass: "qid" line, docid lines, "/" closes the block.
  const bool blocks = std::any_of(lines->begin(), lines->end(), [](const std::string& l) {
    return absl::StripAsciiWhitespace(l) == "/";
  });
  if (blocks) {
    std::string qid;
    for (size_t i = 0; i < lines->size(); ++i) {
      std::vector<std::string> f = Fields((*lines)[i]);
      if (f.empty()) continue;
      if (f.size() == 1 && f[0] == "/") {
        qid.clear();
      } else if (qid.empty() && f.size() == 1) {
        qid = f[0];
      } else if (!qid.empty()) {
        for (const std::string& d : f) qrels[qid][d] = 1;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", i + 1, ": expected a query number"));
      }
    }
    return qrels;
  }
  for (size_t i = 0; i < lines->size(); ++i) {
    std::vector<std::string> f = Fields((*lines)[i]);
    if (f.empty()) continue;
    int grade = 1;
    if (f.size() == 4 && (f[1] == "0" || f[1] == "Q0") && IsNumber(f[3])) {  // TREC
      if (!absl::SimpleAtoi(f[3], &grade)) return absl::InvalidArgumentError("bad grade");
      qrels[f[0]][f[2]] = grade;
    } else if (f.size() == 4) {  // CISI.REL: qid docid 0 0.0 — every listed pair is relevant
      qrels[f[0]][f[1]] = 1;
    } else if (f.size() == 3 && absl::SimpleAtoi(f[2], &grade)) {  // Cranfield, MED
      qrels[f[0]][f[1]] = grade;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", i + 1,
                       ": not a qrels line (expected 'qid 0 docid grade', 'qid docid grade' or "
                       "'qid docid 0 0.0')"));
    }
  }
  return qrels;
}

absl::StatusOr<std::vector<Topic>> LoadTopics(const std::string& path, TopicIds ids) {
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  std::vector<Topic> topics;
  const bool smart = std::any_of(lines->begin(), lines->end(),
                                 [](const std::string& l) { return absl::StartsWith(l, ".I"); });
  const bool blocks = !smart && std::any_of(lines->begin(), lines->end(), [](const std::string& l) {
    return absl::StripAsciiWhitespace(l) == "/";
  });
  if (smart) {
    bool in_text = false;
    for (const std::string& l : *lines) {
      if (absl::StartsWith(l, ".I")) {
        topics.push_back({std::string(absl::StripAsciiWhitespace(l.substr(2))), ""});
        in_text = false;
      } else if (absl::StartsWith(l, ".") && l.size() >= 2 &&
                 std::isupper(static_cast<unsigned char>(l[1]))) {
        in_text = absl::StartsWith(l, ".W") || absl::StartsWith(l, ".T");
      } else if (in_text && !topics.empty()) {
        absl::StrAppend(&topics.back().text, topics.back().text.empty() ? "" : " ", l);
      }
    }
  } else if (blocks) {
    Topic current;
    for (const std::string& l : *lines) {
      absl::string_view s = absl::StripAsciiWhitespace(l);
      if (s == "/") {
        if (!current.id.empty()) topics.push_back(current);
        current = Topic();
      } else if (current.id.empty() && !s.empty()) {
        current.id = std::string(s);
      } else if (!s.empty()) {
        absl::StrAppend(&current.text, current.text.empty() ? "" : " ", s);
      }
    }
    if (!current.id.empty()) topics.push_back(current);
  } else {
    absl::StatusOr<std::vector<workload::QueryRecord>> records = workload::LoadQueryFile(path);
    if (!records.ok()) return records.status();
    for (workload::QueryRecord& r : *records)
      topics.push_back({std::move(r.id), std::move(r.text)});
  }
  if (topics.empty()) return absl::InvalidArgumentError(absl::StrCat("no topics in '", path, "'"));
  if (ids == TopicIds::kOrdinal) {
    for (size_t i = 0; i < topics.size(); ++i) topics[i].id = absl::StrCat(i + 1);
  }
  return topics;
}

QueryMeasures Evaluate(const std::map<std::string, int>& judgments, std::vector<RankedDoc> run) {
  // trec_eval order: score descending, then docno descending.
  std::sort(run.begin(), run.end(), [](const RankedDoc& a, const RankedDoc& b) {
    return a.score != b.score ? a.score > b.score : a.docid > b.docid;
  });
  QueryMeasures m;
  int relevant = 0;
  std::vector<int> gains;
  for (const auto& [doc, grade] : judgments) {
    if (grade > 0) {
      ++relevant;
      gains.push_back(grade);
    }
  }
  if (relevant == 0) return m;
  std::sort(gains.rbegin(), gains.rend());
  double dcg = 0, ideal = 0, precision_sum = 0;
  int found = 0;
  for (size_t r = 0; r < run.size(); ++r) {
    auto it = judgments.find(run[r].docid);
    const int grade = it == judgments.end() ? 0 : it->second;
    if (r < 10 && grade > 0) dcg += grade / std::log2(r + 2.0);
    if (grade > 0) {
      ++found;
      precision_sum += static_cast<double>(found) / (r + 1);
      if (r < 100) m.recall100 += 1.0;
    }
  }
  for (size_t r = 0; r < gains.size() && r < 10; ++r) ideal += gains[r] / std::log2(r + 2.0);
  m.ndcg10 = ideal > 0 ? dcg / ideal : 0;
  m.average_precision = precision_sum / relevant;
  m.recall100 /= relevant;
  return m;
}

Measures EvaluateAll(const Qrels& qrels,
                     const std::map<std::string, std::vector<RankedDoc>>& runs) {
  Measures total;
  for (const auto& [qid, judgments] : qrels) {
    if (std::none_of(judgments.begin(), judgments.end(),
                     [](const auto& j) { return j.second > 0; })) {
      continue;
    }
    ++total.queries;
    auto it = runs.find(qid);
    if (it == runs.end()) continue;
    QueryMeasures m = Evaluate(judgments, it->second);
    total.ndcg10 += m.ndcg10;
    total.map += m.average_precision;
    total.recall100 += m.recall100;
  }
  if (total.queries > 0) {
    total.ndcg10 /= total.queries;
    total.map /= total.queries;
    total.recall100 /= total.queries;
  }
  return total;
}

}  // namespace tandem::workload
