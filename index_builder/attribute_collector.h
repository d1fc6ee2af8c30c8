// File: attribute_collector.h
//
// Collects the selected attributes of every document in docID order while an index is built, and
// turns them into the index's attribute bitmaps at the end (index/attribute_index.h): keyword
// values into a sorted dictionary, integers into buckets (filter::ChooseBuckets), then one bitmap
// per dictionary entry, built by the GPU builder when one is given (Fusco et al. 2013), else by
// the CPU builder.
//
//   AttributeCollector collector({{"year", AttributeType::kInteger}, {"label", ...}});
//   collector.Add(docid, doc.attributes, doc_length);   // docIDs ascending
//   ...
//   TANDEM_ASSIGN_OR_RETURN(auto attributes, collector.Finish(num_docs, codec, builder));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "filter/attribute_index.h"
#include "filter/bitmap.h"
#include "index_builder/document_reader.h"

namespace tandem::index_builder {

// The attribute the builder adds to every document: its length in terms (an integer field).
inline constexpr char kLengthAttribute[] = "length";

struct AttributeSpec {
  std::string name;
  AttributeType type = AttributeType::kKeyword;
};

// Builds one field's bitmaps: filter::BuildBitmaps's contract.
using BitmapBuilder = std::function<absl::StatusOr<filter::BitmapColumns>(
    filter::BitmapCodec, uint32_t num_rows, std::span<const uint32_t> values,
    std::span<const uint32_t> rows)>;

struct AttributeStats {
  std::string name;
  uint64_t values = 0;        // (document, value) pairs stored
  uint64_t not_integers = 0;  // values of an integer field that did not parse, left out
  size_t cardinality = 0;     // dictionary entries
  uint64_t bitmap_bytes = 0;
};

// The fields of `flag` (--attributes: comma-separated names, each optionally ":keyword" or
// ":integer"; "all": every field `format` declares, and "length") for documents of `format`.
// "length" (an integer) exists for every format. A name the format does not declare is accepted
// only when the format's fields depend on the data (a declared name in angle brackets), as a
// keyword unless marked ":integer". INVALID_ARGUMENT naming the field and listing the format's.
absl::StatusOr<std::vector<AttributeSpec>> SelectAttributes(std::string_view format,
                                                            std::string_view flag);

class AttributeCollector {
 public:
  explicit AttributeCollector(std::vector<AttributeSpec> specs);

  bool empty() const { return fields_.empty(); }
  // The document's attributes (any fields; those not selected are ignored) and its length.
  // docIDs ascend across calls.
  void Add(uint32_t docid, std::span<const std::pair<std::string, std::string>> attributes,
           uint32_t length);
  // Drops documents and renumbers the rest: new_docid[d] is d's new docID or UINT32_MAX (gone).
  void Renumber(std::span<const uint32_t> new_docid);
  // The attribute index of num_docs documents; `builder` null: filter::BuildBitmaps.
  absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> Finish(uint32_t num_docs,
                                                                 filter::BitmapCodec codec,
                                                                 const BitmapBuilder& builder);
  // Per field, after Finish.
  const std::vector<AttributeStats>& stats() const { return stats_; }

 private:
  struct Field {
    AttributeSpec spec;
    std::vector<uint32_t> rows;
    std::vector<uint32_t> keyword_ids;  // keyword: first-seen ids into `keywords`
    std::vector<int64_t> integers;      // integer: the values
    absl::flat_hash_map<std::string, uint32_t> keyword_index;
    std::vector<std::string> keywords;
    uint64_t not_integers = 0;
  };
  std::vector<Field> fields_;
  absl::flat_hash_map<std::string, size_t> by_name_;
  std::vector<AttributeStats> stats_;
};

}  // namespace tandem::index_builder
