#include "clients/cli/health_client.h"

#include <vector>

#include "base/enum_names.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace tandem::cli {
namespace {

constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

// HealthCheckRequest { string service = 1; }
std::string EncodeRequest(const std::string& service) {
  std::string bytes;
  if (service.empty()) return bytes;  // proto3 omits a default field
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream out(&stream);
  constexpr uint32_t kServiceTag = (1 << 3) | 2;  // field 1, length-delimited
  out.WriteTag(kServiceTag);
  out.WriteVarint32(static_cast<uint32_t>(service.size()));
  out.WriteString(service);
  return bytes;
}

// grpc.health.v1's names of the statuses.
constexpr base::EnumName<ServingStatus> kServingStatusNames[] = {
    {ServingStatus::kUnknown, "UNKNOWN"},
    {ServingStatus::kServing, "SERVING"},
    {ServingStatus::kNotServing, "NOT_SERVING"},
    {ServingStatus::kServiceUnknown, "SERVICE_UNKNOWN"}};

}  // namespace

absl::string_view ServingStatusName(ServingStatus status) {
  return base::NameOf(kServingStatusNames, status, "UNKNOWN");
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::StatusOr<ServingStatus> CheckHealth(const std::shared_ptr<grpc::ChannelInterface>& channel,
                                          const std::string& service, absl::Duration timeout) {
  const std::string request_bytes = EncodeRequest(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::CompletionQueue cq;
  grpc::GenericStub stub(channel);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, kCheckMethod, request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, nullptr);
  void* tag;
  bool ok;
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (!status.ok()) return FromGrpcStatus(status);

  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("unreadable health response");
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  // HealthCheckResponse { ServingStatus status = 1; }; absent means 0 (UNKNOWN).
  google::protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromString(bytes)) return absl::InternalError("malformed health response");
  ServingStatus result = ServingStatus::kUnknown;
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& f = fields.field(i);
    if (f.number() == 1 && f.type() == google::protobuf::UnknownField::TYPE_VARINT) {
      result = f.varint() <= 3 ? static_cast<ServingStatus>(f.varint()) : ServingStatus::kUnknown;
    }
  }
  return result;
}

}  // namespace tandem::cli
