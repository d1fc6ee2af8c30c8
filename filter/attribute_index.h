// File: attribute_index.h
//
// The filterable attributes of an index's documents (`attributes.bin`, FORMAT.md): per field, a
// dictionary (keyword values, or the buckets of an integer field) and one compressed bitmap per
// dictionary entry (index/bitmap.h, WAH or PLWAH), whose rows are docIDs. Filters
// (index/filter.h) are evaluated on these bitmaps without decompressing them.
//
//   const AttributeIndex* attributes = index.attributes();          // nullptr: none stored
//   const AttributeField* year = attributes->Find("year");
//   BitmapView docs = attributes->Column(*year, year->BucketOf(2002).value());
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "filter/bitmap.h"

namespace tandem::filter {

enum class AttributeKind : uint8_t { kKeyword = 0, kInteger = 1 };
std::string_view AttributeKindName(AttributeKind kind);  // "keyword", "integer"

// The integers [lo, hi] of one bucket of an integer field.
struct IntegerBucket {
  int64_t lo = 0;
  int64_t hi = 0;
  bool operator==(const IntegerBucket&) const = default;
};

struct AttributeField {
  std::string name;
  AttributeKind kind = AttributeKind::kKeyword;
  // The dictionary; entry i is column key i. Keyword: the values, strictly ascending (bytes).
  // Integer: the buckets, ascending and disjoint.
  std::vector<std::string> values;
  std::vector<IntegerBucket> buckets;
  BitmapColumns columns;  // keys: dictionary entries with at least one document

  size_t cardinality() const {
    return kind == AttributeKind::kKeyword ? values.size() : buckets.size();
  }
  // The dictionary entry of a keyword value / the bucket holding an integer; nullopt when none.
  std::optional<uint32_t> ValueId(std::string_view value) const;
  std::optional<uint32_t> BucketOf(int64_t value) const;
  // "[2000, 2004]" or "2002" for a bucket of one value.
  std::string BucketText(uint32_t id) const;
};

class AttributeIndex {
 public:
  // Checks every field (dictionary order, columns within the dictionary, each bitmap canonical and
  // of num_docs rows, names unique and non-empty): INVALID_ARGUMENT naming the field.
  static absl::StatusOr<std::unique_ptr<AttributeIndex>> Create(uint32_t num_docs,
                                                                BitmapCodec codec,
                                                                std::vector<AttributeField> fields);
  // attributes.bin's payload; DATA_LOSS naming the field and the problem when it does not hold
  // an attribute index of num_docs documents.
  static absl::StatusOr<std::unique_ptr<AttributeIndex>> Decode(std::string_view payload,
                                                                uint32_t num_docs);
  std::string Encode() const;

  uint32_t num_docs() const { return num_docs_; }
  BitmapCodec codec() const { return codec_; }
  const std::vector<AttributeField>& fields() const { return fields_; }
  // nullptr when the index has no such field.
  const AttributeField* Find(std::string_view name) const;
  // The documents of dictionary entry `id` (< field.cardinality()): empty when none has it.
  BitmapView Column(const AttributeField& field, uint32_t id) const;
  // Bytes of all bitmaps.
  uint64_t bitmap_bytes() const;

 private:
  AttributeIndex() = default;
  uint32_t num_docs_ = 0;
  BitmapCodec codec_ = BitmapCodec::kWah;
  std::vector<AttributeField> fields_;
};

// The buckets of an integer field from its values (any order, repeats allowed): one per distinct
// value when there are at most max_buckets of them, else about max_buckets of equal frequency,
// cut only between distinct values.
std::vector<IntegerBucket> ChooseBuckets(std::vector<int64_t> values, size_t max_buckets = 256);

}  // namespace tandem::filter
