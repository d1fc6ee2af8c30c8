// File: tandem_cli_write.h
//
// tandem-cli's writes to a node's index (tandem.v1.IndexService.Write): documents read by the
// readers of `tandem-index build` (index_builder/document_reader.h), streamed in messages of a few
// hundred operations over one Write call, and deletes by id. Lives in tools/, not clients/cli/,
// because it uses index_builder's readers.
//
//   absl::StatusOr<WriteResult> result =
//       StreamDocuments(*stub, {.format = "beir", .path = "-", .batch_size = 256}, deadline);
//   std::cout << FormatWriteResult(*result);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "index_builder/document_reader.h"
#include "nlohmann/json.hpp"
#include "tandem/v1/index.grpc.pb.h"

namespace tandem::cli {

struct DocumentSource {
  std::string format;  // an OpenDocumentReader format
  std::string path;    // a file or directory; "-" reads standard input
  size_t batch_size = 256;
};

struct WriteResult {
  uint64_t sent = 0;           // operations sent
  uint64_t bad_documents = 0;  // skipped by the reader (malformed), each reported on stderr
  tandem::v1::WriteResponse response;
};

// The reader format for `path`: `format` itself, or for "auto" the one DetectDocumentFormat finds.
// INVALID_ARGUMENT for an unknown name (the message lists the known ones) and for auto on stdin
// ("-"), whose first bytes detection would consume.
absl::StatusOr<std::string> ResolveFormat(const std::string& format, const std::string& path);

// The operation that indexes `doc`: its id, text, stored fields and attributes.
tandem::v1::WriteOperation IndexOperation(const index_builder::Document& doc);

// Reads every document of `source` and sends it over one Write call whose deadline is `deadline`,
// in messages of `batch_size` operations or about 4 MiB, whichever comes first.
// Errors: those of OpenDocumentReader (INVALID_ARGUMENT for an unknown format, NOT_FOUND for a
// missing path), of reading, or of the call (the message then says how many operations were sent).
absl::StatusOr<WriteResult> StreamDocuments(tandem::v1::IndexService::Stub& stub,
                                            const DocumentSource& source, absl::Time deadline);

// Sends `operations` over one Write call, in messages of `batch_size`.
absl::StatusOr<WriteResult> WriteOperations(
    tandem::v1::IndexService::Stub& stub, const std::vector<tandem::v1::WriteOperation>& operations,
    size_t batch_size, absl::Time deadline);

// "sent 120: acknowledged 119, stale 0, not found 0, refused 1" and a line per listed error (at
// most `max_errors`).
std::string FormatWriteResult(const WriteResult& result, size_t max_errors = 10);
nlohmann::json WriteResultJson(const WriteResult& result);

}  // namespace tandem::cli
