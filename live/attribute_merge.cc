// File: attribute_merge.cc
#include "live/attribute_merge.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "index_builder/attribute_collector.h"

namespace tandem::live {
namespace {

using filter::AttributeField;
using filter::AttributeKind;

std::string Describe(const filter::AttributeIndex* attributes) {
  if (attributes == nullptr) return "no attributes";
  std::string fields;
  for (const AttributeField& f : attributes->fields()) {
    absl::StrAppend(&fields, fields.empty() ? "" : ", ", f.name, ":",
                    std::string(filter::AttributeKindName(f.kind)));
  }
  return absl::StrCat("attributes {", fields, "} in ",
                      std::string(filter::BitmapCodecName(attributes->codec())));
}

bool SameFields(const filter::AttributeIndex& a, const filter::AttributeIndex& b) {
  if (a.codec() != b.codec() || a.fields().size() != b.fields().size()) return false;
  for (size_t f = 0; f < a.fields().size(); ++f) {
    if (a.fields()[f].name != b.fields()[f].name || a.fields()[f].kind != b.fields()[f].kind) {
      return false;
    }
  }
  return true;
}

// One stored value of a document: the field's position and its dictionary entry.
struct Value {
  uint32_t doc;
  uint32_t field;
  uint32_t key;
  bool operator<(const Value& o) const {
    return doc != o.doc ? doc < o.doc : field != o.field ? field < o.field : key < o.key;
  }
};

// Every value the bitmaps of `attributes` hold, by document.
std::vector<Value> ValuesByDocument(const filter::AttributeIndex& attributes) {
  std::vector<Value> values;
  for (uint32_t f = 0; f < attributes.fields().size(); ++f) {
    const filter::BitmapColumns& columns = attributes.fields()[f].columns;
    for (size_t c = 0; c < columns.num_columns(); ++c) {
      columns.Column(c).ForEachRow([&](uint32_t doc) {
        values.push_back({doc, f, columns.keys[c]});
      });
    }
  }
  std::sort(values.begin(), values.end());
  return values;
}

}  // namespace

absl::Status CheckAttributesAgree(absl::Span<const MergeInput> inputs) {
  const filter::AttributeIndex* first = inputs[0].segment->attributes();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const filter::AttributeIndex* other = inputs[i].segment->attributes();
    if ((first == nullptr) != (other == nullptr) ||
        (first != nullptr && !SameFields(*first, *other))) {
      return absl::InvalidArgumentError(
          absl::StrCat("segments '", inputs[0].segment->directory(), "' (", Describe(first),
                       ") and '", inputs[i].segment->directory(), "' (", Describe(other),
                       ") differ in their attributes; only segments of one schema merge"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> MergeAttributes(
    absl::Span<const MergeInput> inputs, const std::vector<std::vector<uint32_t>>& new_docids,
    uint32_t num_docs) {
  const filter::AttributeIndex* first = inputs[0].segment->attributes();
  if (first == nullptr) return nullptr;
  std::vector<index_builder::AttributeSpec> specs;
  for (const AttributeField& f : first->fields()) {
    specs.push_back({f.name, f.kind == AttributeKind::kInteger
                                 ? index_builder::AttributeType::kInteger
                                 : index_builder::AttributeType::kKeyword});
  }
  // The collector a fresh build uses, fed the live documents' values as a reader gives them
  // (text), so the dictionaries and buckets are chosen by the same code.
  index_builder::AttributeCollector collector(std::move(specs));
  std::vector<std::pair<std::string, std::string>> doc_values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const index::Index& segment = *inputs[i].segment;
    const std::vector<AttributeField>& fields = segment.attributes()->fields();
    const std::vector<Value> values = ValuesByDocument(*segment.attributes());
    auto unrebuildable = [&](const AttributeField& f, uint32_t doc, absl::string_view why) {
      return absl::UnimplementedError(absl::StrFormat(
          "segment '%s', document %d: attribute \"%s\" %s, so a merge cannot rebuild it as a "
          "fresh build would",
          segment.directory(), doc, f.name, why));
    };
    // The field "length", if any: the collector takes each document's length from the document,
    // as a fresh build does, so the stored one must be that, once.
    const AttributeField* length_field =
        segment.attributes()->Find(index_builder::kLengthAttribute);
    size_t next = 0;
    for (uint32_t d = 0; d < segment.num_docs(); ++d) {
      const size_t begin = next;
      while (next < values.size() && values[next].doc == d) ++next;
      if (new_docids[i][d] == kDroppedDocument) continue;
      doc_values.clear();
      const uint32_t length = segment.doc_length(d);
      int lengths = 0;
      for (size_t v = begin; v < next; ++v) {
        const AttributeField& f = fields[values[v].field];
        const uint32_t key = values[v].key;
        if (&f == length_field) {
          const bool holds = f.kind == AttributeKind::kKeyword
                                 ? f.values[key] == absl::StrCat(length)
                                 : f.buckets[key].lo <= length && length <= f.buckets[key].hi;
          if (!holds || ++lengths > 1) {
            return unrebuildable(f, d, "does not hold the document's length");
          }
        } else if (f.kind == AttributeKind::kKeyword) {
          doc_values.emplace_back(f.name, f.values[key]);
        } else if (f.buckets[key].lo == f.buckets[key].hi) {
          doc_values.emplace_back(f.name, absl::StrCat(f.buckets[key].lo));
        } else {
          return unrebuildable(f, d,
                               absl::StrCat("holds a bucket of several values, ", f.BucketText(key),
                                            ", not the value itself"));
        }
      }
      if (length_field != nullptr && lengths != 1) {
        return unrebuildable(*length_field, d, "does not hold the document's length");
      }
      collector.Add(new_docids[i][d], doc_values, length);
    }
  }
  return collector.Finish(num_docs, first->codec(), nullptr);
}

}  // namespace tandem::live
