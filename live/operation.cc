#include "live/operation.h"

#include <cstring>
#include <utility>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"
#include "base/utf8.h"

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
  if (!base::IsValidUtf8(id())) return Refuse(*this, "id", "is not UTF-8");
  if (kind == Kind::kDelete) return absl::OkStatus();
  if (!base::IsValidUtf8(document.text)) return Refuse(*this, "text", "is not UTF-8");
  for (const auto& [name, value] : document.fields) {
    if (name.empty()) return Refuse(*this, "a stored field", "has no name");
    if (!base::IsValidUtf8(name) || !base::IsValidUtf8(value)) {
      return Refuse(*this, absl::StrCat("field '", name.substr(0, 64), "'"), "is not UTF-8");
    }
  }
  for (const auto& [name, value] : document.attributes) {
    if (name.empty()) return Refuse(*this, "an attribute", "has no name");
    if (!base::IsValidUtf8(name) || !base::IsValidUtf8(value)) {
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
