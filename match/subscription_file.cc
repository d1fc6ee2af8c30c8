#include "match/subscription_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/stale_files.h"
#include "base/status_macros.h"
#include "base/sync_directory.h"
#include "index/file_format.h"
#include "xxhash.h"

namespace tandem::match {
namespace {

// Payload: varint next_id, varint count, then per subscription: varint id, string interface,
// varint filters, per filter varint constraints, per constraint: string name, u8 op, u8 type,
// value (zigzag varint | 8-byte IEEE double, little-endian | string). A string is a varint length
// and its bytes.
void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutString(absl::string_view s, std::string* out) {
  PutVarint(s.size(), out);
  out->append(s.data(), s.size());
}

class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Byte(uint8_t* b) {
    if (pos_ >= bytes_.size()) return false;
    *b = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool String(std::string* s) {
    uint64_t n;
    if (!Varint(&n) || n > bytes_.size() - pos_) return false;
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Double(double* d) {
    if (bytes_.size() - pos_ < 8) return false;
    std::memcpy(d, bytes_.data() + pos_, 8);
    pos_ += 8;
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }
  size_t pos() const { return pos_; }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
};

absl::Status Malformed(size_t pos, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("malformed subscriptions at payload byte ", pos, ": ", what));
}

absl::Status SyncDirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return base::SyncDirectory(slash == std::string::npos ? "." : path.substr(0, slash + 1));
}

// One subscription: varint id, string interface, its predicate.
void EncodeRecord(const SubscriptionRecord& r, std::string* out_ptr) {
  std::string& out = *out_ptr;
  PutVarint(r.id, &out);
  PutString(r.interface, &out);
  PutVarint(r.predicate.filters.size(), &out);
  for (const Filter& f : r.predicate.filters) {
    PutVarint(f.constraints.size(), &out);
    for (const Constraint& c : f.constraints) {
      PutString(c.name, &out);
      out.push_back(static_cast<char>(c.op));
      out.push_back(static_cast<char>(c.value.type));
      switch (c.value.type) {
        case ValueType::kInt:
          PutVarint(
              (static_cast<uint64_t>(c.value.i) << 1) ^ static_cast<uint64_t>(c.value.i >> 63),
              &out);
          break;
        case ValueType::kDouble: {
          char bytes[8];
          std::memcpy(bytes, &c.value.d, 8);
          out.append(bytes, 8);
          break;
        }
        case ValueType::kString:
          PutString(c.value.s, &out);
          break;
      }
    }
  }
}

// The inverse of EncodeRecord, checking what NormalizePredicate would.
absl::Status DecodeRecord(Reader& in, size_t payload_size, SubscriptionRecord* record) {
  SubscriptionRecord& r = *record;
  {
    uint64_t filters;
    if (!in.Varint(&r.id) || !in.String(&r.interface) || !in.Varint(&filters)) {
      return Malformed(in.pos(), "subscription");
    }
    if (r.interface.empty()) return Malformed(in.pos(), "empty interface");
    if (filters == 0 || filters > payload_size) return Malformed(in.pos(), "filter count");
    r.predicate.filters.resize(filters);
    for (Filter& f : r.predicate.filters) {
      uint64_t constraints;
      if (!in.Varint(&constraints) || constraints == 0 ||
          constraints > static_cast<uint64_t>(kMaxConstraintsPerFilter)) {
        return Malformed(in.pos(), "constraint count");
      }
      f.constraints.resize(constraints);
      for (Constraint& c : f.constraints) {
        uint8_t op, type;
        if (!in.String(&c.name) || !in.Byte(&op) || !in.Byte(&type)) {
          return Malformed(in.pos(), "constraint");
        }
        if (c.name.empty()) return Malformed(in.pos(), "empty attribute name");
        if (op >= kNumOps) return Malformed(in.pos(), absl::StrCat("operator ", op));
        if (type > static_cast<uint8_t>(ValueType::kString)) {
          return Malformed(in.pos(), absl::StrCat("value type ", type));
        }
        c.op = static_cast<Op>(op);
        c.value.type = static_cast<ValueType>(type);
        bool ok = true;
        switch (c.value.type) {
          case ValueType::kInt: {
            uint64_t z;
            ok = in.Varint(&z);
            c.value.i = static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
            break;
          }
          case ValueType::kDouble:
            ok = in.Double(&c.value.d);
            break;
          case ValueType::kString:
            ok = in.String(&c.value.s);
            break;
        }
        if (!ok) return Malformed(in.pos(), "value");
        // Only what NormalizePredicate lets through: the engines rely on it.
        const bool is_string = c.value.type == ValueType::kString;
        const bool terms = c.name == kTermsName;
        if ((c.op == Op::kContains) != terms || (terms && !is_string) ||
            ((c.op == Op::kPrefix || c.op == Op::kSubstring) && !is_string) ||
            ((c.op == Op::kLt || c.op == Op::kGt || c.op == Op::kLe || c.op == Op::kGe) &&
             is_string) ||
            (c.value.type == ValueType::kDouble && !std::isfinite(c.value.d))) {
          return Malformed(in.pos(), absl::StrCat("constraint ", c.name, " ", OpName(c.op), " ",
                                                  FormatValue(c.value)));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string EncodeSubscriptions(const SubscriptionSnapshot& snapshot) {
  std::string out;
  PutVarint(snapshot.next_id, &out);
  PutVarint(snapshot.records.size(), &out);
  for (const SubscriptionRecord& r : snapshot.records) EncodeRecord(r, &out);
  return out;
}

absl::StatusOr<SubscriptionSnapshot> DecodeSubscriptions(absl::string_view payload) {
  Reader in(payload);
  SubscriptionSnapshot snapshot;
  uint64_t count;
  if (!in.Varint(&snapshot.next_id) || !in.Varint(&count)) return Malformed(in.pos(), "header");
  // Each record takes at least 4 bytes: a count beyond that is damage, not a reason to allocate.
  if (count > payload.size() / 4) return Malformed(in.pos(), "subscription count");
  snapshot.records.resize(count);
  SubscriptionId previous = 0;
  for (SubscriptionRecord& r : snapshot.records) {
    TANDEM_RETURN_IF_ERROR(DecodeRecord(in, payload.size(), &r));
    if (r.id == 0 || r.id <= previous || r.id >= snapshot.next_id) {
      return Malformed(in.pos(), absl::StrCat("subscription id ", r.id, " out of order"));
    }
    previous = r.id;
  }
  if (!in.done()) return Malformed(in.pos(), "trailing bytes");
  return snapshot;
}

absl::Status WriteSubscriptionFile(const std::string& path, const SubscriptionSnapshot& snapshot) {
  const std::string tmp = path + base::PidTaggedSuffix(".tmp-");
  {
    TANDEM_ASSIGN_OR_RETURN(auto writer,
                            index::FileWriter::Create(tmp, index::FileKind::kSubscriptions));
    absl::Status s = writer->Append(EncodeSubscriptions(snapshot));
    if (s.ok()) s = writer->Finish();  // fsyncs
    if (!s.ok()) {
      std::remove(tmp.c_str());
      return s;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("rename ", tmp, " to ", path));
  }
  return SyncDirectoryOf(path);
}

absl::StatusOr<SubscriptionSnapshot> ReadSubscriptionFile(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(index::MappedFile file,
                          index::MappedFile::Open(path, index::FileKind::kSubscriptions));
  absl::StatusOr<SubscriptionSnapshot> snapshot = DecodeSubscriptions(file.payload());
  if (!snapshot.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", snapshot.status().message()));
  }
  return snapshot;
}

absl::Status FsyncDirectoryOf(const std::string& path) { return SyncDirectoryOf(path); }

// The change log. Header: magic `TANDSLOG`, u32 version, u32 reserved (0). Then frames, one per
// group commit: u32 size of the changes, u64 XXH3-64 of them, the changes. A change: u8 kind (1
// add, 2 remove), then the subscription as in the snapshot (add) or its varint id (remove).
namespace {

constexpr absl::string_view kLogMagic = "TANDSLOG";
constexpr uint32_t kLogVersion = 1;
constexpr size_t kLogHeaderBytes = 16;
constexpr size_t kFrameHeaderBytes = 12;
constexpr uint8_t kAdd = 1;
constexpr uint8_t kRemove = 2;

void PutFixed(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetFixed(absl::string_view bytes, size_t pos, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[pos + i])) << (8 * i);
  return v;
}
bool AllZero(absl::string_view bytes) {
  return bytes.find_first_not_of('\0') == absl::string_view::npos;
}

absl::Status DecodeChanges(absl::string_view changes, size_t frame_at,
                           std::vector<SubscriptionChange>* out) {
  Reader in(changes);
  while (!in.done()) {
    uint8_t kind;
    SubscriptionChange change;
    bool ok = in.Byte(&kind);
    if (ok && kind == kAdd) {
      absl::Status s = DecodeRecord(in, changes.size(), &change.record);
      if (!s.ok()) {
        return absl::DataLossError(absl::StrCat("the change log's frame at byte ", frame_at,
                                                " passes its checksum but: ", s.message()));
      }
    } else if (ok && kind == kRemove) {
      change.remove = true;
      ok = in.Varint(&change.record.id);
    } else {
      ok = false;
    }
    if (!ok || change.record.id == 0) {
      return absl::DataLossError(absl::StrCat("the change log's frame at byte ", frame_at,
                                              " passes its checksum but holds a malformed change"));
    }
    out->push_back(std::move(change));
  }
  return absl::OkStatus();
}

}  // namespace

void EncodeChange(const SubscriptionChange& change, std::string* out) {
  if (change.remove) {
    out->push_back(static_cast<char>(kRemove));
    PutVarint(change.record.id, out);
  } else {
    out->push_back(static_cast<char>(kAdd));
    EncodeRecord(change.record, out);
  }
}

std::string FrameLogBatch(absl::string_view changes) {
  std::string out;
  out.reserve(kFrameHeaderBytes + changes.size());
  PutFixed(changes.size(), 4, &out);
  PutFixed(XXH3_64bits(changes.data(), changes.size()), 8, &out);
  out.append(changes.data(), changes.size());
  return out;
}

std::string LogHeader() {
  std::string out(kLogMagic);
  PutFixed(kLogVersion, 4, &out);
  PutFixed(0, 4, &out);
  return out;
}

absl::StatusOr<SubscriptionLogContents> DecodeSubscriptionLog(absl::string_view bytes) {
  if (bytes.size() < kLogHeaderBytes || bytes.substr(0, 8) != kLogMagic) {
    return absl::DataLossError("not a subscriptions change log (bad header)");
  }
  if (const uint64_t version = GetFixed(bytes, 8, 4); version != kLogVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("change log version ", version, "; this build reads version ", kLogVersion));
  }
  SubscriptionLogContents contents;
  size_t pos = kLogHeaderBytes;
  while (pos < bytes.size()) {
    const absl::string_view rest = bytes.substr(pos);
    // A frame cut short, or a tail the file system left zeroed, can only be the last write, which
    // a crash interrupted before its fsync returned: it was never acknowledged.
    if (rest.size() < kFrameHeaderBytes || AllZero(rest)) {
      contents.torn = absl::StrCat(rest.size(), " bytes at byte ", pos, " hold no whole change");
      break;
    }
    const uint64_t size = GetFixed(bytes, pos, 4);
    const uint64_t hash = GetFixed(bytes, pos + 4, 8);
    if (size > rest.size() - kFrameHeaderBytes) {
      contents.torn =
          absl::StrCat("the frame at byte ", pos, " is cut short (", size, " bytes of changes, ",
                       rest.size() - kFrameHeaderBytes, " in the file)");
      break;
    }
    const absl::string_view changes = rest.substr(kFrameHeaderBytes, size);
    const bool last =
        size == rest.size() - kFrameHeaderBytes || AllZero(rest.substr(kFrameHeaderBytes + size));
    if (size == 0 || XXH3_64bits(changes.data(), changes.size()) != hash) {
      if (last) {
        contents.torn = absl::StrCat("the last frame, at byte ", pos, ", fails its checksum");
        break;
      }
      return absl::DataLossError(absl::StrCat("the change log is damaged at byte ", pos, " (",
                                              rest.size(), " bytes before its end)"));
    }
    TANDEM_RETURN_IF_ERROR(DecodeChanges(changes, pos, &contents.changes));
    pos += kFrameHeaderBytes + size;
  }
  contents.valid_bytes = pos;
  return contents;
}

absl::StatusOr<SubscriptionLogContents> ReadSubscriptionLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  absl::StatusOr<SubscriptionLogContents> contents = DecodeSubscriptionLog(bytes);
  if (!contents.ok()) {
    return absl::Status(contents.status().code(),
                        absl::StrCat(path, ": ", contents.status().message()));
  }
  return contents;
}

}  // namespace tandem::match
