// File: reader_fuzz.h
//
// The body of the document-reader fuzzers (reader_*_fuzzer.cc, one per input format): the input
// becomes the one file a reader of that format is opened on, named as the format's files are named,
// and every document is read. The file lives in the fuzzer's scratch directory (fuzz_util.h), on
// tmpfs when deploy/fuzz.sh finds one.
//
// Checks, besides no crash and no read out of bounds, the promises of document_reader.h:
//   - reading ends without an error (the file is readable; bad documents are skipped);
//   - every bad-document report is INVALID_ARGUMENT and starts with "file:line: ";
//   - every document has a non-empty external id and a location in the file; its id, text and
//     stored fields are valid UTF-8, and its text holds no control characters but tab, line feed
//     and carriage return.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "index_builder/document_reader.h"
#include "index_builder/utf8.h"

namespace tandem::fuzz {

inline void CheckDocumentText(absl::string_view text) {
  TANDEM_FUZZ_CHECK(IsValidUtf8(text));
  for (char c : text) {
    TANDEM_FUZZ_CHECK(!index_builder::IsNonTextControl(static_cast<unsigned char>(c)));
  }
}

inline int FuzzDocumentReader(absl::string_view format, absl::string_view file_name,
                              const uint8_t* data, size_t size) {
  const std::string path =
      WriteScratchFile(file_name, absl::string_view(reinterpret_cast<const char*>(data), size));
  const std::string prefix = absl::StrCat(path, ":");
  index_builder::ReaderOptions options;
  options.on_bad_document = [&prefix](const absl::Status& status) {
    TANDEM_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    TANDEM_FUZZ_CHECK(absl::StartsWith(status.message(), prefix));
  };
  absl::StatusOr<std::unique_ptr<index_builder::DocumentReader>> reader =
      index_builder::OpenDocumentReader({format.data(), format.size()}, path, options);
  TANDEM_FUZZ_CHECK(reader.ok());
  index_builder::Document doc;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    TANDEM_FUZZ_CHECK(more.ok());
    if (!*more) break;
    TANDEM_FUZZ_CHECK(!doc.external_id.empty());
    TANDEM_FUZZ_CHECK(IsValidUtf8(doc.external_id));
    TANDEM_FUZZ_CHECK(absl::StartsWith(doc.location, prefix));
    CheckDocumentText(doc.text);
    for (const auto& [name, value] : doc.fields) {
      TANDEM_FUZZ_CHECK(IsValidUtf8(name));
      TANDEM_FUZZ_CHECK(IsValidUtf8(value));
    }
  }
  return 0;
}

}  // namespace tandem::fuzz
