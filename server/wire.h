// File: wire.h
//
// The service reads its requests and writes its responses as bytes (gRPC's raw callback methods)
// rather than letting gRPC's generated code do it, for three reasons:
//   - a request that does not parse gets INVALID_ARGUMENT with a message, is counted and its log
//     line rate-limited; gRPC's generated handlers answer it UNIMPLEMENTED with no message, which a
//     broker reads as "this node lacks the method";
//   - an overloaded node refuses a call before spending anything on parsing it;
//   - a response larger than the send limit is refused with a message naming the limit, instead of
//     failing inside the transport.
//
//   TANDEM_RETURN_IF_ERROR(ParseRequest(*bytes, request));       // INVALID_ARGUMENT
//   TANDEM_RETURN_IF_ERROR(SerializeResponse(response, limit, *out));  // RESOURCE_EXHAUSTED
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"

namespace tandem::server {

// Parses `bytes` into `message`, which is cleared first. INVALID_ARGUMENT ("request is not a valid
// tandem.v1.SearchRequest (12 bytes)") when they are not a valid encoding of it, including string
// fields that are not UTF-8. `bytes` is left as it was.
absl::Status ParseRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message& message);

// Serializes `message` into `out`. RESOURCE_EXHAUSTED, naming both sizes, when it would take more
// than `max_bytes`; `out` is then empty.
absl::Status SerializeResponse(const google::protobuf::Message& message, size_t max_bytes,
                               grpc::ByteBuffer& out);

// INTERNAL naming the first string field of `message` (its path, as "subscriptions[2].interface")
// that is not UTF-8, looking into every nested message. Protobuf writes such a string as it is, but
// a conforming client refuses the whole message: the node answers an error it can read instead.
absl::Status CheckUtf8Strings(const google::protobuf::Message& message);

}  // namespace tandem::server
