// File: output.h
//
// What tandem-cli prints. Readable output is a table (rank, score, external id, docid) followed by
// one stats line; --json prints the protobuf messages in their canonical proto3 JSON form (field
// names as in search.proto), one JSON document per line so that batch output can be piped through
// jq.
//
//   std::cout << FormatSearchResponse(response);
//   std::cout << ToJson(response).dump() << "\n";
#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "tandem/v1/search.pb.h"

namespace tandem::cli {

std::string FormatSearchResponse(const tandem::v1::SearchResponse& response);

std::string FormatIndexInfo(const tandem::v1::GetIndexInfoResponse& info);

// Canonical proto3 JSON (snake_case names, defaults included).
nlohmann::json ToJson(const google::protobuf::Message& message);

// "INVALID_ARGUMENT: k must be between 1 and 10000, got 20000".
std::string StatusLine(const absl::Status& status);

// {"code": "INVALID_ARGUMENT", "message": "..."}.
nlohmann::json StatusJson(const absl::Status& status);

}  // namespace tandem::cli
