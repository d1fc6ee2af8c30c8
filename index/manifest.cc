// File: manifest.cc
//
// The index manifest (FORMAT.md, "Manifest") to and from JSON. Every number is range-checked on the
// way in: a manifest is input, and nlohmann's plain casts would turn a bad value into another one.
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "index/index.h"
#include "nlohmann/json.hpp"

namespace tandem::index {
namespace {

// A manifest number that does not fit its field.
struct BadNumber {
  const char* key;
  const char* expected;
};

// nlohmann's get<> converts numbers with a plain cast: a negative or too large value would become
// some other integer, and a float outside the target's range is undefined behavior. These take
// only values that fit.
template <typename T>
T UnsignedField(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  if (!value.is_number_unsigned() || value.get<uint64_t>() > std::numeric_limits<T>::max()) {
    throw BadNumber{key, sizeof(T) == 4 ? "an integer in [0, 2^32)" : "an integer in [0, 2^64)"};
  }
  return static_cast<T>(value.get<uint64_t>());
}

float FloatField(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  const double v = value.is_number() ? value.get<double>() : NAN;
  if (!(std::fabs(v) <= std::numeric_limits<float>::max())) throw BadNumber{key, "a float"};
  return static_cast<float>(v);
}

}  // namespace

std::string IndexManifest::ToJson() const {
  nlohmann::json j;
  j["format_version"] = format_version;
  j["index_id"] = index_id;
  j["build_time"] = build_time;
  j["codec"] = codec;
  j["block_size"] = block_size;
  j["analyzer"] = {{"tokenizer", analyzer.tokenizer},
                   {"possessive", analyzer.possessive},
                   {"lowercase", analyzer.lowercase},
                   {"stopwords", analyzer.stopwords},
                   {"stemmer", analyzer.stemmer}};
  j["bm25"] = {{"k1", bm25.k1}, {"b", bm25.b}};
  j["stats"] = {{"num_docs", stats.num_docs},
                {"num_terms", stats.num_terms},
                {"num_postings", stats.num_postings},
                {"total_doc_length", stats.total_doc_length},
                {"avg_doc_length", stats.avg_doc_length}};
  j["source"] = {{"format", source_format}, {"input", source_input}};
  j["builder"] = builder;
  if (shard) {
    j["shard"] = {{"shard", shard->shard},
                  {"shards", shard->shards},
                  {"first_docid", shard->first_docid},
                  {"collection_index_id", shard->collection_index_id},
                  {"collection_num_docs", shard->collection_num_docs},
                  {"collection_avg_doc_length", shard->collection_avg_doc_length}};
  }
  if (files) {
    nlohmann::json named = nlohmann::json::object();
    for (const auto& [name, file] : *files) {
      named[name] = {{"bytes", file.bytes}, {"xxh3", absl::StrFormat("%016x", file.checksum)}};
    }
    j["files"] = std::move(named);
  }
  return j.dump(2);
}

absl::StatusOr<IndexManifest> IndexManifest::FromJson(absl::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError("manifest is not a JSON object");
  }
  IndexManifest m;
  try {
    m.format_version = UnsignedField<uint32_t>(j, "format_version");
    m.index_id = j.at("index_id").get<std::string>();
    m.build_time = j.at("build_time").get<std::string>();
    m.codec = j.at("codec").get<std::string>();
    m.block_size = UnsignedField<uint32_t>(j, "block_size");
    const auto& a = j.at("analyzer");
    m.analyzer.tokenizer = a.at("tokenizer").get<std::string>();
    m.analyzer.possessive = a.at("possessive").get<bool>();
    m.analyzer.lowercase = a.at("lowercase").get<bool>();
    m.analyzer.stopwords = a.at("stopwords").get<std::string>();
    m.analyzer.stemmer = a.at("stemmer").get<std::string>();
    m.bm25.k1 = FloatField(j.at("bm25"), "k1");
    m.bm25.b = FloatField(j.at("bm25"), "b");
    const auto& s = j.at("stats");
    m.stats.num_docs = UnsignedField<uint32_t>(s, "num_docs");
    m.stats.num_terms = UnsignedField<uint64_t>(s, "num_terms");
    m.stats.num_postings = UnsignedField<uint64_t>(s, "num_postings");
    m.stats.total_doc_length = UnsignedField<uint64_t>(s, "total_doc_length");
    m.stats.avg_doc_length = FloatField(s, "avg_doc_length");
    m.source_format = j.at("source").at("format").get<std::string>();
    m.source_input = j.at("source").at("input").get<std::string>();
    m.builder = j.at("builder").get<std::string>();
    if (j.contains("shard")) {
      const auto& sh = j.at("shard");
      ShardManifest shard;
      shard.shard = UnsignedField<uint32_t>(sh, "shard");
      shard.shards = UnsignedField<uint32_t>(sh, "shards");
      shard.first_docid = UnsignedField<uint32_t>(sh, "first_docid");
      shard.collection_index_id = sh.at("collection_index_id").get<std::string>();
      shard.collection_num_docs = UnsignedField<uint32_t>(sh, "collection_num_docs");
      shard.collection_avg_doc_length = FloatField(sh, "collection_avg_doc_length");
      m.shard = std::move(shard);
    }
    if (j.contains("files")) {
      const auto& named = j.at("files");
      if (!named.is_object()) throw BadNumber{"files", "an object"};
      m.files.emplace();
      for (const auto& [name, file] : named.items()) {
        ManifestFile f;
        f.bytes = UnsignedField<uint64_t>(file, "bytes");
        const std::string hex = file.at("xxh3").get<std::string>();
        if (hex.size() != 16 || !absl::SimpleHexAtoi(hex, &f.checksum)) {
          throw BadNumber{"xxh3", "16 hex digits"};
        }
        (*m.files)[name] = f;
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(
        absl::StrCat("manifest is missing a field or has a wrong type: ", e.what()));
  } catch (const BadNumber& e) {
    return absl::DataLossError(absl::StrCat("manifest field \"", e.key, "\" is not ", e.expected));
  }
  return m;
}

}  // namespace tandem::index
