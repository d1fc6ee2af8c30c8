// File: operation.h
//
// One write to a live index: index (add or replace) a document by its external id, or delete one,
// with an optional external version. Operations are what the write-ahead log stores, one record
// each, in the byte form Encode gives:
//
//   u8 kind (1 index, 2 delete) | u8 has_version | u64 version (little-endian, 0 when none)
//   | string id | string text | u32 count, then per stored field: string name, string value
//   | u32 count, then per attribute: string name, string value
//
// where a string is a u32 byte length and the bytes. A delete stores no text, fields or
// attributes (counts 0).
//
//   Operation op = Operation::Index(doc);
//   std::string record = op.Encode();
//   TANDEM_ASSIGN_OR_RETURN(Operation back, Operation::Decode(record));
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "index_builder/document_reader.h"

namespace tandem::live {

struct Operation {
  enum class Kind : uint8_t { kIndex = 1, kDelete = 2 };
  Kind kind = Kind::kIndex;
  // Operations on one id apply in version order: one older than (or as old as) the version the
  // index holds for the id is skipped, so replicas fed the same operations in any order agree.
  std::optional<uint64_t> version;
  index_builder::Document document;  // a delete uses document.external_id alone

  static Operation Index(index_builder::Document doc, std::optional<uint64_t> version = {});
  static Operation Delete(std::string external_id, std::optional<uint64_t> version = {});
  const std::string& id() const { return document.external_id; }

  // INVALID_ARGUMENT naming the field: an empty id or one over kMaxIdBytes, an id, text, field or
  // attribute that is not UTF-8, a field or attribute without a name.
  absl::Status Validate() const;

  std::string Encode() const;
  // DATA_LOSS for bytes that Encode did not write.
  static absl::StatusOr<Operation> Decode(absl::string_view record);
};

inline constexpr size_t kMaxIdBytes = 512;

}  // namespace tandem::live
