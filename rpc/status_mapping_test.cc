#include "rpc/status_mapping.h"

#include "gtest/gtest.h"

namespace tandem::rpc {
namespace {

TEST(StatusMappingTest, EveryCanonicalCodeKeepsItsMeaning) {
  const std::pair<absl::StatusCode, grpc::StatusCode> pairs[] = {
      {absl::StatusCode::kOk, grpc::StatusCode::OK},
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
  };
  for (const auto& [absl_code, grpc_code] : pairs) {
    EXPECT_EQ(ToGrpcCode(absl_code), grpc_code) << absl::StatusCodeToString(absl_code);
    // The names the metrics and the CLI print are the canonical ones.
    EXPECT_EQ(GrpcCodeName(grpc_code), absl::StatusCodeToString(absl_code));
  }
}

TEST(StatusMappingTest, NonCanonicalCodesBecomeUnknown) {
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(42)), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(GrpcCodeName(static_cast<grpc::StatusCode>(99)), "UNKNOWN");
}

TEST(StatusMappingTest, KeepsTheMessage) {
  const grpc::Status s =
      ToGrpcStatus(absl::InvalidArgumentError("k must be between 1 and 10000, got 20000"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "k must be between 1 and 10000, got 20000");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusMappingTest, QueryStatusCarriesCodeAndMessage) {
  const tandem::v1::QueryStatus q = ToQueryStatus(absl::ResourceExhaustedError("queue full"));
  EXPECT_EQ(q.code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_EQ(q.message(), "queue full");
  const tandem::v1::QueryStatus ok = ToQueryStatus(absl::OkStatus());
  EXPECT_EQ(ok.code(), 0);
  EXPECT_TRUE(ok.message().empty());
}

}  // namespace
}  // namespace tandem::rpc
