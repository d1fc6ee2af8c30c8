// File: attribute_index.cc
#include "filter/attribute_index.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::filter {
namespace {

// Little-endian fields, appended and read back with bounds checks.
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    out_->append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint32_t>(uint32_t(s.size()));
    out_->append(s);
  }
  template <typename T>
  void PutArray(const std::vector<T>& v) {
    if (v.empty()) return;
    out_->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }

 private:
  std::string* out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || in_.size() - pos_ < n) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool GetArray(uint64_t n, std::vector<T>* v) {
    if (n > (in_.size() - pos_) / sizeof(T)) return false;
    v->resize(n);
    if (n > 0) std::memcpy(v->data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

absl::Status CheckField(const AttributeField& f, uint32_t num_docs, BitmapCodec codec) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("attribute field \"", f.name, "\": ", what));
  };
  if (f.name.empty()) return absl::InvalidArgumentError("an attribute field without a name");
  if (f.kind == AttributeKind::kKeyword) {
    if (!f.buckets.empty()) return error("a keyword field with integer buckets");
    for (size_t i = 1; i < f.values.size(); ++i) {
      if (!(f.values[i - 1] < f.values[i])) {
        return error(absl::StrCat("values not strictly ascending at entry ", i));
      }
    }
  } else if (f.kind == AttributeKind::kInteger) {
    if (!f.values.empty()) return error("an integer field with keyword values");
    for (size_t i = 0; i < f.buckets.size(); ++i) {
      if (f.buckets[i].lo > f.buckets[i].hi) return error(absl::StrCat("bucket ", i, " is empty"));
      if (i > 0 && f.buckets[i - 1].hi >= f.buckets[i].lo) {
        return error(absl::StrCat("buckets ", i - 1, " and ", i, " overlap or are out of order"));
      }
    }
  } else {
    return error("unknown kind");
  }
  const BitmapColumns& c = f.columns;
  if (c.codec != codec) return error("columns of another bitmap codec");
  if (c.num_rows != num_docs) {
    return error(
        absl::StrFormat("columns of %d rows in an index of %d documents", c.num_rows, num_docs));
  }
  if (c.offsets.size() != c.keys.size() + 1 || c.offsets.front() != 0 ||
      c.offsets.back() != c.words.size()) {
    return error("column offsets do not match the columns");
  }
  for (size_t i = 0; i < c.keys.size(); ++i) {
    if (c.keys[i] >= f.cardinality()) {
      return error(
          absl::StrFormat("column %d is dictionary entry %d of %d", i, c.keys[i], f.cardinality()));
    }
    if (i > 0 && c.keys[i - 1] >= c.keys[i]) return error("column keys not ascending");
    if (c.offsets[i] > c.offsets[i + 1] || c.offsets[i + 1] > c.words.size()) {
      return error("column offsets not ascending within the words");
    }
    if (absl::Status s = ValidateBitmap(codec, num_docs, c.Column(i).words()); !s.ok()) {
      return error(absl::StrCat("column of ",
                                f.kind == AttributeKind::kKeyword
                                    ? absl::StrCat("\"", f.values[c.keys[i]], "\"")
                                    : f.BucketText(c.keys[i]),
                                ": ", std::string(s.message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view AttributeKindName(AttributeKind kind) {
  return kind == AttributeKind::kKeyword ? "keyword" : "integer";
}

std::optional<uint32_t> AttributeField::ValueId(std::string_view value) const {
  auto it = std::lower_bound(values.begin(), values.end(), value);
  if (it == values.end() || *it != value) return std::nullopt;
  return uint32_t(it - values.begin());
}

std::optional<uint32_t> AttributeField::BucketOf(int64_t value) const {
  auto it = std::partition_point(buckets.begin(), buckets.end(),
                                 [&](const IntegerBucket& b) { return b.hi < value; });
  if (it == buckets.end() || it->lo > value) return std::nullopt;
  return uint32_t(it - buckets.begin());
}

std::string AttributeField::BucketText(uint32_t id) const {
  const IntegerBucket& b = buckets[id];
  return b.lo == b.hi ? absl::StrCat(b.lo) : absl::StrCat("[", b.lo, ", ", b.hi, "]");
}

absl::StatusOr<std::unique_ptr<AttributeIndex>> AttributeIndex::Create(
    uint32_t num_docs, BitmapCodec codec, std::vector<AttributeField> fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (absl::Status s = CheckField(fields[i], num_docs, codec); !s.ok()) return s;
    for (size_t j = 0; j < i; ++j) {
      if (fields[j].name == fields[i].name) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute field \"", fields[i].name, "\" appears twice"));
      }
    }
  }
  std::unique_ptr<AttributeIndex> index(new AttributeIndex());
  index->num_docs_ = num_docs;
  index->codec_ = codec;
  index->fields_ = std::move(fields);
  return index;
}

const AttributeField* AttributeIndex::Find(std::string_view name) const {
  for (const AttributeField& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

BitmapView AttributeIndex::Column(const AttributeField& field, uint32_t id) const {
  const ptrdiff_t i = field.columns.Find(id);
  if (i < 0) return BitmapView(codec_, num_docs_, {});
  return field.columns.Column(size_t(i));
}

uint64_t AttributeIndex::bitmap_bytes() const {
  uint64_t bytes = 0;
  for (const AttributeField& f : fields_) bytes += f.columns.words.size() * sizeof(uint32_t);
  return bytes;
}

// Payload: u32 num_docs, u8 codec, u8 0, u16 0, u32 num_fields; then per field: string name,
// u8 kind, u32 cardinality, the dictionary (strings, or i64 lo/hi pairs), u32 num_columns,
// u32 keys[num_columns], u64 offsets[num_columns + 1], u32 words[offsets[num_columns]]. Strings
// are u32 length and bytes.
std::string AttributeIndex::Encode() const {
  std::string out;
  Writer w(&out);
  w.Put<uint32_t>(num_docs_);
  w.Put<uint8_t>(uint8_t(codec_));
  w.Put<uint8_t>(0);
  w.Put<uint16_t>(0);
  w.Put<uint32_t>(uint32_t(fields_.size()));
  for (const AttributeField& f : fields_) {
    w.PutString(f.name);
    w.Put<uint8_t>(uint8_t(f.kind));
    w.Put<uint32_t>(uint32_t(f.cardinality()));
    if (f.kind == AttributeKind::kKeyword) {
      for (const std::string& v : f.values) w.PutString(v);
    } else {
      for (const IntegerBucket& b : f.buckets) {
        w.Put<int64_t>(b.lo);
        w.Put<int64_t>(b.hi);
      }
    }
    w.Put<uint32_t>(uint32_t(f.columns.keys.size()));
    w.PutArray(f.columns.keys);
    w.PutArray(f.columns.offsets);
    w.PutArray(f.columns.words);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<AttributeIndex>> AttributeIndex::Decode(std::string_view payload,
                                                                       uint32_t num_docs) {
  Reader r(payload);
  auto loss = [](const std::string& what) { return absl::DataLossError(what); };
  uint32_t stored_docs = 0, num_fields = 0;
  uint8_t codec = 0, pad8 = 0;
  uint16_t pad16 = 0;
  if (!r.Get(&stored_docs) || !r.Get(&codec) || !r.Get(&pad8) || !r.Get(&pad16) ||
      !r.Get(&num_fields)) {
    return loss("truncated header");
  }
  if (pad8 != 0 || pad16 != 0) return loss("reserved header bytes are not 0");
  if (stored_docs != num_docs) {
    return loss(
        absl::StrFormat("attributes of %d documents in an index of %d", stored_docs, num_docs));
  }
  if (codec > uint8_t(BitmapCodec::kPlwah))
    return loss(absl::StrCat("unknown bitmap codec ", codec));
  std::vector<AttributeField> fields;
  for (uint32_t i = 0; i < num_fields; ++i) {
    AttributeField f;
    uint8_t kind = 0;
    uint32_t cardinality = 0, num_columns = 0;
    const std::string where = absl::StrCat("field ", i);
    if (!r.GetString(&f.name) || !r.Get(&kind) || !r.Get(&cardinality)) {
      return loss(absl::StrCat(where, ": truncated"));
    }
    if (kind > uint8_t(AttributeKind::kInteger)) {
      return loss(absl::StrCat(where, " (\"", f.name, "\"): unknown kind ", kind));
    }
    f.kind = AttributeKind(kind);
    for (uint32_t j = 0; j < cardinality; ++j) {
      bool ok = true;
      if (f.kind == AttributeKind::kKeyword) {
        ok = r.GetString(&f.values.emplace_back());
      } else {
        IntegerBucket& b = f.buckets.emplace_back();
        ok = r.Get(&b.lo) && r.Get(&b.hi);
      }
      if (!ok) return loss(absl::StrCat(where, " (\"", f.name, "\"): truncated dictionary"));
    }
    f.columns.codec = BitmapCodec(codec);
    f.columns.num_rows = num_docs;
    if (!r.Get(&num_columns) || !r.GetArray(num_columns, &f.columns.keys) ||
        !r.GetArray(uint64_t{num_columns} + 1, &f.columns.offsets)) {
      return loss(absl::StrCat(where, " (\"", f.name, "\"): truncated columns"));
    }
    if (!r.GetArray(f.columns.offsets.back(), &f.columns.words)) {
      return loss(absl::StrCat(where, " (\"", f.name, "\"): truncated bitmaps"));
    }
    fields.push_back(std::move(f));
  }
  if (!r.done()) return loss("bytes after the last field");
  auto index = Create(num_docs, BitmapCodec(codec), std::move(fields));
  if (!index.ok()) return loss(std::string(index.status().message()));
  return index;
}

std::vector<IntegerBucket> ChooseBuckets(std::vector<int64_t> values, size_t max_buckets) {
  std::sort(values.begin(), values.end());
  std::vector<IntegerBucket> buckets;
  if (values.empty()) return buckets;
  size_t distinct = 1;
  for (size_t i = 1; i < values.size(); ++i) distinct += values[i] != values[i - 1];
  if (distinct <= max_buckets || max_buckets <= 1) {
    if (max_buckets <= 1) return {IntegerBucket{values.front(), values.back()}};
    for (size_t i = 0; i < values.size(); ++i) {
      if (i == 0 || values[i] != values[i - 1]) buckets.push_back({values[i], values[i]});
    }
    return buckets;
  }
  // Equal frequency: a bucket closes once it holds its share, at the next change of value.
  const double share = double(values.size()) / double(max_buckets);
  size_t begin = 0;
  while (begin < values.size()) {
    size_t end = std::min(values.size(), begin + std::max<size_t>(1, size_t(share)));
    while (end < values.size() && values[end] == values[end - 1]) ++end;
    buckets.push_back({values[begin], values[end - 1]});
    begin = end;
  }
  return buckets;
}

}  // namespace tandem::filter
