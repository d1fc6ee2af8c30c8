// File: health_client.h
//
// A client of the standard grpc.health.v1.Health service. gRPC's C++ packages ship the server side
// only (no generated client stubs), and the two messages involved are one field each, so the call
// goes through grpc::GenericStub with the messages encoded by hand; protobuf's UnknownFieldSet
// reads the reply. Wire format: health.proto in the gRPC repository.
//
//   absl::StatusOr<ServingStatus> s = CheckHealth(channel, "", absl::Seconds(5));
//   if (s.ok() && *s == ServingStatus::kServing) ...
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace tandem::cli {

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class ServingStatus {
  kUnknown = 0,
  kServing = 1,
  kNotServing = 2,
  kServiceUnknown = 3,
};

// "SERVING", "NOT_SERVING", "UNKNOWN", "SERVICE_UNKNOWN".
absl::string_view ServingStatusName(ServingStatus status);

// Health of `service` ("" for the whole server). An RPC failure (server unreachable, unknown
// service answered with NOT_FOUND) is returned as the error status.
absl::StatusOr<ServingStatus> CheckHealth(const std::shared_ptr<grpc::ChannelInterface>& channel,
                                          const std::string& service, absl::Duration timeout);

// Converts a call's outcome; the gRPC code keeps its canonical value.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace tandem::cli
