#include "server/wire.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/utf8.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "grpcpp/support/status.h"

namespace tandem::server {
namespace {

using google::protobuf::FieldDescriptor;

// Appends to `path` the place of the first string that is not UTF-8 and returns false.
bool StringsAreUtf8(const google::protobuf::Message& message, std::string* path) {
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const bool is_string = field->type() == FieldDescriptor::TYPE_STRING;
    const bool is_message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!is_string && !is_message) continue;
    const int n = field->is_repeated() ? reflection.FieldSize(message, field) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string place =
          field->is_repeated() ? absl::StrCat(field->name(), "[", i, "]") : field->name();
      bool ok;
      if (is_string) {
        std::string scratch;
        const std::string& value =
            field->is_repeated()
                ? reflection.GetRepeatedStringReference(message, field, i, &scratch)
                : reflection.GetStringReference(message, field, &scratch);
        ok = base::IsValidUtf8(value);
        if (!ok) absl::StrAppend(path, path->empty() ? "" : ".", place);
      } else {
        const google::protobuf::Message& child =
            field->is_repeated() ? reflection.GetRepeatedMessage(message, field, i)
                                 : reflection.GetMessage(message, field);
        std::string inner;
        ok = StringsAreUtf8(child, &inner);
        if (!ok) absl::StrAppend(path, path->empty() ? "" : ".", place, ".", inner);
      }
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace

absl::Status CheckUtf8Strings(const google::protobuf::Message& message) {
  std::string path;
  if (StringsAreUtf8(message, &path)) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the answer's ", path,
                                          " is not UTF-8, so no client could read it; the node "
                                          "refused to send it"));
}

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
