// File: status_mapping.h
//
// The one place where the server turns absl::Status (what every component returns) into what goes
// on the wire: a grpc::Status for a whole call, or a tandem.v1.QueryStatus for one query of a batch
// or a stream. absl::StatusCode and grpc::StatusCode share the canonical google.rpc.Code numbering,
// but the mapping is spelled out so a code that exists on one side only can never leak through
// unchecked.
//
//   reactor->Finish(ToGrpcStatus(result.status()));
//   *batch_result.mutable_status() = ToQueryStatus(outcome.status());
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"
#include "tandem/v1/search.pb.h"

namespace tandem::rpc {

grpc::StatusCode ToGrpcCode(absl::StatusCode code);

// Keeps the message; an OK status maps to grpc::Status::OK.
grpc::Status ToGrpcStatus(const absl::Status& status);

tandem::v1::QueryStatus ToQueryStatus(const absl::Status& status);

// The canonical upper-case name of a gRPC code ("INVALID_ARGUMENT"), used in metric labels and by
// tandem-cli's error lines. Values outside the canonical range read "UNKNOWN".
absl::string_view GrpcCodeName(grpc::StatusCode code);

}  // namespace tandem::rpc
