// Filters' text form (clients send it) and their evaluation. The bytes are a filter's text:
// ParseFilter never crashes and refuses only with INVALID_ARGUMENT naming an offset or the size
// limit; a filter it accepts passes ValidateFilter, prints to text that parses to the same tree,
// and on a fixed attribute index (keyword fields, integer fields with exact and multi-value
// buckets, documents with no value or several) either is refused with INVALID_ARGUMENT or gives,
// in both bitmap codecs, a canonical bitmap of exactly the documents a brute-force evaluation of
// their dictionary entries selects.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "filter/attribute_index.h"
#include "filter/bitmap.h"
#include "filter/filter.h"
#include "fuzz/fuzz_util.h"

namespace {

using namespace tandem::filter;  // NOLINT: a fuzzer's one file

constexpr uint32_t kDocs = 200;

// Each document's dictionary entries, per field (keyword values or integer buckets).
struct Field {
  std::string name;
  AttributeKind kind;
  std::vector<std::string> values;
  std::vector<IntegerBucket> buckets;
  std::vector<std::vector<uint32_t>> entries;  // per document, ascending, unique
};

const std::vector<Field>& Fields() {
  static const auto* fields = [] {
    auto* out = new std::vector<Field>;
    out->push_back({"domain", AttributeKind::kKeyword, {"a.com", "b.com", "c d", "or"}, {}, {}});
    out->push_back({"label", AttributeKind::kKeyword, {"ham", "spam"}, {}, {}});
    std::vector<IntegerBucket> years;
    for (int64_t y = 1998; y <= 2005; ++y) years.push_back({y, y});
    out->push_back({"year", AttributeKind::kInteger, {}, years, {}});
    out->push_back({"length",
                    AttributeKind::kInteger,
                    {},
                    {{-9, -1}, {0, 99}, {100, 199}, {300, 399}, {500, 500}},
                    {}});
    // Deterministic documents: a few without a value, a few with several.
    uint64_t state = 0x9E3779B97F4A7C15ull;
    auto next = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return uint32_t(state >> 33);
    };
    for (Field& f : *out) {
      const uint32_t cardinality =
          uint32_t(f.kind == AttributeKind::kKeyword ? f.values.size() : f.buckets.size());
      f.entries.resize(kDocs);
      for (uint32_t d = 0; d < kDocs; ++d) {
        const uint32_t n = next() % 8 == 0 ? 0 : next() % 6 == 0 ? 2 : 1;
        // The last entry of each dictionary is on no document.
        for (uint32_t i = 0; i < n; ++i) f.entries[d].push_back(next() % (cardinality - 1));
        std::sort(f.entries[d].begin(), f.entries[d].end());
        f.entries[d].erase(std::unique(f.entries[d].begin(), f.entries[d].end()),
                           f.entries[d].end());
      }
    }
    return out;
  }();
  return *fields;
}

const AttributeIndex& Index(BitmapCodec codec) {
  static const AttributeIndex* indexes[2] = {nullptr, nullptr};
  const AttributeIndex*& index = indexes[int(codec)];
  if (index == nullptr) {
    std::vector<AttributeField> fields;
    for (const Field& f : Fields()) {
      std::vector<uint32_t> rows, values;
      for (uint32_t d = 0; d < kDocs; ++d) {
        for (const uint32_t e : f.entries[d]) {
          rows.push_back(d);
          values.push_back(e);
        }
      }
      AttributeField field;
      field.name = f.name;
      field.kind = f.kind;
      field.values = f.values;
      field.buckets = f.buckets;
      field.columns = *BuildBitmaps(codec, kDocs, values, rows);
      fields.push_back(std::move(field));
    }
    auto created = AttributeIndex::Create(kDocs, codec, std::move(fields));
    TANDEM_FUZZ_CHECK(created.ok());
    index = created->release();
  }
  return *index;
}

// The brute force on dictionary entries, for a filter that EvaluateFilter accepted (so every value
// is in the dictionary and every bound falls on a bucket's edge or between buckets).
bool Matches(const FilterNode& node, uint32_t doc) {
  switch (node.kind) {
    case FilterNode::Kind::kAnd:
      for (const FilterNode& c : node.children) {
        if (!Matches(c, doc)) return false;
      }
      return true;
    case FilterNode::Kind::kOr:
      for (const FilterNode& c : node.children) {
        if (Matches(c, doc)) return true;
      }
      return false;
    case FilterNode::Kind::kNot:
      return !Matches(node.children[0], doc);
    default:
      break;
  }
  const Field* field = nullptr;
  for (const Field& f : Fields()) {
    if (f.name == node.field) field = &f;
  }
  TANDEM_FUZZ_CHECK(field != nullptr);
  for (const uint32_t e : field->entries[doc]) {
    if (node.kind == FilterNode::Kind::kRange) {
      const IntegerBucket& b = field->buckets[e];
      if ((!node.lo || *node.lo <= b.lo) && (!node.hi || b.hi <= *node.hi)) return true;
      continue;
    }
    for (const std::string& v : node.values) {
      if (field->kind == AttributeKind::kKeyword) {
        if (field->values[e] == v) return true;
      } else {
        const IntegerBucket& b = field->buckets[e];
        const std::optional<int64_t> i = ParseFilterInteger(v);
        TANDEM_FUZZ_CHECK(i.has_value());
        if (b.lo <= *i && *i <= b.hi) {
          TANDEM_FUZZ_CHECK(b.lo == b.hi);  // a term inside a wider bucket is refused
          return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tandem::fuzz::Bytes text(absl::string_view(reinterpret_cast<const char*>(data), size));
  absl::StatusOr<FilterNode> filter = ParseFilter(std::string_view(text.data(), text.size()));
  if (!filter.ok()) {
    TANDEM_FUZZ_CHECK(absl::IsInvalidArgument(filter.status()));
    TANDEM_FUZZ_CHECK(absl::StrContains(filter.status().message(), "offset ") ||
                      absl::StrContains(filter.status().message(), "bytes; at most"));
    return 0;
  }
  TANDEM_FUZZ_CHECK(ValidateFilter(*filter).ok());
  const std::string printed = FilterToText(*filter);
  absl::StatusOr<FilterNode> again = ParseFilter(printed);
  TANDEM_FUZZ_CHECK(again.ok() && *again == *filter);
  TANDEM_FUZZ_CHECK(FilterToText(*again) == printed);

  // Refused or answered alike in both codecs.
  absl::StatusOr<Bitmap> docs[2] = {EvaluateFilter(*filter, Index(BitmapCodec::kWah)),
                                    EvaluateFilter(*filter, Index(BitmapCodec::kPlwah))};
  TANDEM_FUZZ_CHECK(docs[0].ok() == docs[1].ok());
  if (!docs[0].ok()) {
    TANDEM_FUZZ_CHECK(absl::IsInvalidArgument(docs[0].status()) &&
                      docs[0].status() == docs[1].status());
    return 0;
  }
  std::vector<uint32_t> rows[2];
  for (const BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    const Bitmap& bitmap = *docs[int(codec)];
    TANDEM_FUZZ_CHECK(bitmap.codec() == codec && bitmap.num_rows() == kDocs);
    TANDEM_FUZZ_CHECK(ValidateBitmap(codec, kDocs, bitmap.words()).ok());
    rows[int(codec)] = bitmap.Rows();
  }
  TANDEM_FUZZ_CHECK(rows[0] == rows[1]);
  std::vector<uint32_t> expected;
  for (uint32_t d = 0; d < kDocs; ++d) {
    if (Matches(*filter, d)) expected.push_back(d);
  }
  TANDEM_FUZZ_CHECK(rows[0] == expected);
  return 0;
}
