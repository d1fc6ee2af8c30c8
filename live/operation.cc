#include "live/operation.h"

#include <cstring>
#include <utility>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"

namespace tandem::live {

Operation Operation::Index(index_builder::Document doc, std::optional<uint64_t> version) {
  Operation op;
  op.kind = Kind::kIndex;
  op.version = version;
  op.document = std::move(doc);
  return op;
}

Operation Operation::Delete(std::string external_id, std::optional<uint64_t> version) {
  Operation op;
  op.kind = Kind::kDelete;
  op.version = version;
  op.document.external_id = std::move(external_id);
  return op;
}

namespace {

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or values past U+10FFFF). Control
// characters are valid UTF-8, and the analyzer reads them as separators, as builds do.
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

absl::Status Refuse(const Operation& op, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("document '", op.id().substr(0, 64), "': ", field, " ", why));
}

void PutU32(std::string& out, uint32_t v) {
  char b[4];
  absl::little_endian::Store32(b, v);
  out.append(b, 4);
}

void PutString(std::string& out, absl::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s.data(), s.size());
}

// Reads what PutU32 and PutString wrote, failing past the end.
class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool U8(uint8_t& v) {
    if (in_.empty()) return false;
    v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t& v) {
    if (in_.size() < 4) return false;
    v = absl::little_endian::Load32(in_.data());
    in_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t& v) {
    if (in_.size() < 8) return false;
    v = absl::little_endian::Load64(in_.data());
    in_.remove_prefix(8);
    return true;
  }
  bool String(std::string& s) {
    uint32_t n = 0;
    if (!U32(n) || in_.size() < n) return false;
    s.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool Pairs(std::vector<std::pair<std::string, std::string>>& pairs) {
    uint32_t n = 0;
    if (!U32(n) || n > in_.size() / 8) return false;  // each pair takes at least 8 bytes
    pairs.resize(n);
    for (auto& [name, value] : pairs) {
      if (!String(name) || !String(value)) return false;
    }
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  absl::string_view in_;
};

}  // namespace

absl::Status Operation::Validate() const {
  if (id().empty()) return Refuse(*this, "id", "is empty");
  if (id().size() > kMaxIdBytes) {
    return Refuse(*this, "id", absl::StrCat("has ", id().size(), " bytes, over ", kMaxIdBytes));
  }
  if (!IsUtf8(id())) return Refuse(*this, "id", "is not UTF-8");
  if (kind == Kind::kDelete) return absl::OkStatus();
  if (!IsUtf8(document.text)) return Refuse(*this, "text", "is not UTF-8");
  for (const auto& [name, value] : document.fields) {
    if (name.empty()) return Refuse(*this, "a stored field", "has no name");
    if (!IsUtf8(name) || !IsUtf8(value)) {
      return Refuse(*this, absl::StrCat("field '", name.substr(0, 64), "'"), "is not UTF-8");
    }
  }
  for (const auto& [name, value] : document.attributes) {
    if (name.empty()) return Refuse(*this, "an attribute", "has no name");
    if (!IsUtf8(name) || !IsUtf8(value)) {
      return Refuse(*this, absl::StrCat("attribute '", name.substr(0, 64), "'"), "is not UTF-8");
    }
  }
  return absl::OkStatus();
}

std::string Operation::Encode() const {
  std::string out;
  out.push_back(static_cast<char>(kind));
  out.push_back(version.has_value() ? 1 : 0);
  char b[8];
  absl::little_endian::Store64(b, version.value_or(0));
  out.append(b, 8);
  PutString(out, id());
  PutString(out, document.text);
  for (const auto* pairs : {&document.fields, &document.attributes}) {
    PutU32(out, static_cast<uint32_t>(pairs->size()));
    for (const auto& [name, value] : *pairs) {
      PutString(out, name);
      PutString(out, value);
    }
  }
  return out;
}

absl::StatusOr<Operation> Operation::Decode(absl::string_view record) {
  Operation op;
  Reader in(record);
  uint8_t kind = 0, has_version = 0;
  uint64_t version = 0;
  const bool ok = in.U8(kind) && in.U8(has_version) && in.U64(version) &&
                  in.String(op.document.external_id) && in.String(op.document.text) &&
                  in.Pairs(op.document.fields) && in.Pairs(op.document.attributes) && in.done();
  if (!ok || (kind != 1 && kind != 2) || has_version > 1) {
    return absl::DataLossError(
        absl::StrCat("a logged operation of ", record.size(), " bytes does not parse"));
  }
  op.kind = static_cast<Kind>(kind);
  if (has_version == 1) op.version = version;
  return op;
}

}  // namespace tandem::live
