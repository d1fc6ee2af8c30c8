// File: attribute_collector.cc
#include "index_builder/attribute_collector.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"

namespace tandem::index_builder {

absl::StatusOr<std::vector<AttributeSpec>> SelectAttributes(std::string_view format,
                                                            std::string_view flag) {
  const std::vector<AttributeField> declared = DocumentAttributeFields(format);
  bool open = false;  // names from the data
  std::string known;
  for (const AttributeField& f : declared) {
    if (f.name.starts_with("<")) {
      open = true;
    }
    absl::StrAppend(&known, known.empty() ? "" : ", ", f.name);
  }
  absl::StrAppend(&known, known.empty() ? "" : ", ", kLengthAttribute);
  std::vector<AttributeSpec> specs;
  auto add = [&](AttributeSpec spec) {
    for (const AttributeSpec& s : specs) {
      if (s.name == spec.name) return;
    }
    specs.push_back(std::move(spec));
  };
  for (absl::string_view part :
       absl::StrSplit(absl::string_view(flag.data(), flag.size()), ',', absl::SkipWhitespace())) {
    std::string item(absl::StripAsciiWhitespace(part));
    if (item == "all") {
      for (const AttributeField& f : declared) {
        if (!f.name.starts_with("<")) add({f.name, f.type});
      }
      add({kLengthAttribute, AttributeType::kInteger});
      continue;
    }
    std::optional<AttributeType> marked;
    if (const size_t colon = item.rfind(':'); colon != std::string::npos) {
      const std::string type = item.substr(colon + 1);
      if (type == "keyword") {
        marked = AttributeType::kKeyword;
      } else if (type == "integer") {
        marked = AttributeType::kInteger;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "--attributes: \"", item, "\": the type after ':' must be keyword or integer"));
      }
      item.resize(colon);
    }
    if (item.empty()) {
      return absl::InvalidArgumentError("--attributes: an empty field name");
    }
    if (item == kLengthAttribute) {
      add({kLengthAttribute, AttributeType::kInteger});
      continue;
    }
    const AttributeField* found = nullptr;
    for (const AttributeField& f : declared) {
      if (f.name == item) found = &f;
    }
    if (found != nullptr) {
      if (marked && *marked != found->type) {
        return absl::InvalidArgumentError(
            absl::StrCat("--attributes: \"", item, "\" is ",
                         found->type == AttributeType::kInteger ? "an integer" : "a keyword",
                         " field of ", std::string(format)));
      }
      add({found->name, found->type});
    } else if (open) {
      add({item, marked.value_or(AttributeType::kKeyword)});
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--attributes: ", std::string(format),
                                                     " documents have no field \"", item,
                                                     "\" (they have: ", known, ")"));
    }
  }
  return specs;
}

AttributeCollector::AttributeCollector(std::vector<AttributeSpec> specs) {
  for (AttributeSpec& spec : specs) {
    if (by_name_.contains(spec.name)) continue;
    by_name_[spec.name] = fields_.size();
    Field& f = fields_.emplace_back();
    f.spec = std::move(spec);
  }
}

void AttributeCollector::Add(uint32_t docid,
                             std::span<const std::pair<std::string, std::string>> attributes,
                             uint32_t length) {
  auto add = [&](Field& f, std::string_view value) {
    if (f.spec.type == AttributeType::kInteger) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &v)) {
        ++f.not_integers;
        return;
      }
      f.integers.push_back(v);
    } else {
      auto it = f.keyword_index.find(absl::string_view(value.data(), value.size()));
      if (it == f.keyword_index.end()) {
        it = f.keyword_index.emplace(std::string(value), f.keywords.size()).first;
        f.keywords.emplace_back(value);
      }
      f.keyword_ids.push_back(it->second);
    }
    f.rows.push_back(docid);
  };
  for (const auto& [name, value] : attributes) {
    auto it = by_name_.find(name);
    if (it != by_name_.end() && name != kLengthAttribute) add(fields_[it->second], value);
  }
  if (auto it = by_name_.find(kLengthAttribute); it != by_name_.end()) {
    Field& f = fields_[it->second];
    if (f.spec.type == AttributeType::kInteger) {
      f.integers.push_back(length);
      f.rows.push_back(docid);
    } else {
      add(f, absl::StrCat(length));
    }
  }
}

void AttributeCollector::Renumber(std::span<const uint32_t> new_docid) {
  for (Field& f : fields_) {
    size_t kept = 0;
    for (size_t i = 0; i < f.rows.size(); ++i) {
      const uint32_t d = new_docid[f.rows[i]];
      if (d == UINT32_MAX) continue;
      f.rows[kept] = d;
      if (f.spec.type == AttributeType::kInteger) {
        f.integers[kept] = f.integers[i];
      } else {
        f.keyword_ids[kept] = f.keyword_ids[i];
      }
      ++kept;
    }
    f.rows.resize(kept);
    if (f.spec.type == AttributeType::kInteger) {
      f.integers.resize(kept);
    } else {
      f.keyword_ids.resize(kept);
    }
  }
}

absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> AttributeCollector::Finish(
    uint32_t num_docs, filter::BitmapCodec codec, const BitmapBuilder& builder) {
  std::vector<filter::AttributeField> out;
  stats_.clear();
  for (Field& f : fields_) {
    filter::AttributeField field;
    field.name = f.spec.name;
    std::vector<uint32_t> values(f.rows.size());
    if (f.spec.type == AttributeType::kInteger) {
      field.kind = filter::AttributeKind::kInteger;
      field.buckets = filter::ChooseBuckets(f.integers);
      for (size_t i = 0; i < values.size(); ++i) values[i] = *field.BucketOf(f.integers[i]);
    } else {
      field.kind = filter::AttributeKind::kKeyword;
      // The dictionary in byte order; first-seen ids renamed to their rank.
      std::vector<uint32_t> order(f.keywords.size());
      std::iota(order.begin(), order.end(), 0u);
      std::sort(order.begin(), order.end(),
                [&](uint32_t a, uint32_t b) { return f.keywords[a] < f.keywords[b]; });
      std::vector<uint32_t> rank(order.size());
      for (size_t r = 0; r < order.size(); ++r) {
        rank[order[r]] = uint32_t(r);
        field.values.push_back(std::move(f.keywords[order[r]]));
      }
      for (size_t i = 0; i < values.size(); ++i) values[i] = rank[f.keyword_ids[i]];
    }
    absl::StatusOr<filter::BitmapColumns> columns =
        builder ? builder(codec, num_docs, values, f.rows)
                : filter::BuildBitmaps(codec, num_docs, values, f.rows);
    if (!columns.ok()) {
      return absl::Status(columns.status().code(),
                          absl::StrCat("attribute \"", f.spec.name,
                                       "\": ", std::string(columns.status().message())));
    }
    field.columns = *std::move(columns);
    stats_.push_back({.name = field.name,
                      .values = f.rows.size(),
                      .not_integers = f.not_integers,
                      .cardinality = field.cardinality(),
                      .bitmap_bytes = field.columns.words.size() * sizeof(uint32_t)});
    out.push_back(std::move(field));
    // The collected values are no longer needed.
    f.rows = {};
    f.keyword_ids = {};
    f.integers = {};
    f.keyword_index = {};
    f.keywords = {};
  }
  return filter::AttributeIndex::Create(num_docs, codec, std::move(out));
}

}  // namespace tandem::index_builder
