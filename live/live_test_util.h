// What the live index's tests share: documents from memory into the offline builder (the fresh
// build every answer is compared with), random texts over a skewed vocabulary, and the model of
// a live collection, its documents in the order of their latest write.
//
//   LiveModel model;
//   model.Put(RandomDocument(rng, "d1"));
//   ASSERT_TRUE(BuildDocuments(model.Live(), dir).ok());
#pragma once

#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "index/index.h"
#include "index/query.h"
#include "index_builder/inverter.h"

namespace tandem::live::testing {

using index_builder::Document;

// Hands out copies of documents held in memory.
class DocumentList : public index_builder::DocumentReader {
 public:
  explicit DocumentList(const std::vector<Document>& docs) : docs_(docs) {}
  absl::StatusOr<bool> Next(Document* doc) override {
    if (next_ == docs_.size()) return false;
    *doc = docs_[next_++];
    return true;
  }

 private:
  const std::vector<Document>& docs_;
  size_t next_ = 0;
};

// `docs` built at `dir` as `tandem-index build` builds them, on one thread.
inline absl::Status BuildDocuments(const std::vector<Document>& docs, const std::string& dir,
                                   const std::string& codec = "pfor",
                                   std::vector<index_builder::AttributeSpec> attributes = {}) {
  DocumentList reader(docs);
  index::IndexWriterOptions writer;
  writer.codec = codec;
  index_builder::InverterOptions options;
  options.threads = 1;
  options.attributes = std::move(attributes);
  return index_builder::BuildIndex(reader, dir, writer, options).status();
}

// Words "w0".."w<vocabulary - 1>", the lower ones more frequent (geometric with `p`): short and
// long lists, AND queries that match.
struct TextShape {
  int max_words = 40;
  double p = 0.1;
  int vocabulary = 60;
};

inline std::string RandomText(std::mt19937& rng, TextShape shape = {}) {
  std::uniform_int_distribution<int> length(1, shape.max_words);
  std::geometric_distribution<int> word(shape.p);
  std::vector<std::string> words;
  for (int w = length(rng); w > 0; --w) {
    words.push_back(absl::StrCat("w", word(rng) % shape.vocabulary));
  }
  return absl::StrJoin(words, " ");
}

// A document of random text with the stored field title = "title of ID".
inline Document RandomDocument(std::mt19937& rng, const std::string& id, TextShape shape = {}) {
  Document d;
  d.external_id = id;
  d.text = RandomText(rng, shape);
  d.fields = {{"title", absl::StrCat("title of ", id)}};
  return d;
}

// A query of one to three words of RandomText's vocabulary ("w0".."w<vocabulary - 1>"), in any
// mode, for the top 1, 5 or 20.
inline index::Query RandomQuery(std::mt19937& rng, int vocabulary = 64) {
  index::Query query;
  for (int t = 1 + static_cast<int>(rng() % 3); t > 0; --t) {
    query.terms.push_back({absl::StrCat("w", rng() % vocabulary), 1.0f});
  }
  query.mode = static_cast<index::QueryMode>(rng() % 3);
  query.k = std::vector<uint32_t>{1, 5, 20}[rng() % 3];
  return query;
}

// The hits as (external id, score), the way answers of differently numbered indexes compare:
// resolved in `table`, or in the result's own document table when it names one, else in `index`.
using Ranked = std::vector<std::pair<std::string, float>>;
inline Ranked RankedIds(const index::SearchResult& result, const index::DocumentTable& table) {
  Ranked ranked;
  for (const index::Hit& h : result.hits) ranked.emplace_back(table.external_id(h.docid), h.score);
  return ranked;
}
inline Ranked RankedIds(const index::SearchResult& result, const index::Index& index) {
  if (result.documents != nullptr) return RankedIds(result, *result.documents);
  Ranked ranked;
  for (const index::Hit& h : result.hits) ranked.emplace_back(index.external_id(h.docid), h.score);
  return ranked;
}

// The live documents in the order of their latest write.
class LiveModel {
 public:
  void Put(const Document& d) {
    Remove(d.external_id);
    order_[++clock_] = d;
    where_[d.external_id] = clock_;
  }
  void Remove(const std::string& id) {
    auto it = where_.find(id);
    if (it == where_.end()) return;
    order_.erase(it->second);
    where_.erase(it);
  }
  bool Holds(const std::string& id) const { return where_.contains(id); }
  const Document& Get(const std::string& id) const { return order_.at(where_.at(id)); }
  size_t size() const { return order_.size(); }
  std::vector<Document> Live() const {
    std::vector<Document> docs;
    for (const auto& [clock, d] : order_) docs.push_back(d);
    return docs;
  }

 private:
  uint64_t clock_ = 0;
  std::map<uint64_t, Document> order_;
  std::map<std::string, uint64_t> where_;
};

// Lowers this process's file size limit, with SIGXFSZ ignored so that a write past it fails with
// EFBIG instead of killing the process: a full disk without root or a small filesystem.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &limit) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
  bool ok_ = false;
};

}  // namespace tandem::live::testing
