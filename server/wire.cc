#include "server/wire.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "grpcpp/support/status.h"

namespace tandem::server {

absl::Status ParseRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message& message) {
  message.Clear();
  // A copy of a ByteBuffer shares its slices; the reader consumes the copy.
  grpc::ByteBuffer copy(bytes);
  const size_t size = copy.Length();
  if (size == 0) return absl::OkStatus();  // the empty message (a buffer may then hold no data)
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !message.ParseFromZeroCopyStream(&reader)) {
    message.Clear();
    return absl::InvalidArgumentError(absl::StrCat(
        "request is not a valid ", message.GetDescriptor()->full_name(), " (", size, " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status SerializeResponse(const google::protobuf::Message& message, size_t max_bytes,
                               grpc::ByteBuffer& out) {
  out.Clear();
  const size_t size = message.ByteSizeLong();
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the response would take ", size, " bytes, more than this node sends in one ",
                     "message (", max_bytes, "); ask for fewer hits or fewer queries per call"));
  }
  bool own_buffer = false;
  const grpc::Status written =
      grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, &out, &own_buffer);
  if (!written.ok()) {
    out.Clear();
    return absl::InternalError(
        absl::StrCat("cannot serialize the response: ", written.error_message()));
  }
  return absl::OkStatus();
}

}  // namespace tandem::server
