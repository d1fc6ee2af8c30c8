#include "tests/e2e_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace tandem::testing {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

constexpr char kReflectionMethod[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

// ServerReflectionRequest with one string field set (4: file_containing_symbol, 7: list_services).
std::string EncodeReflectionRequest(int field, const std::string& value) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream out(&stream);
  out.WriteTag(static_cast<uint32_t>(field << 3 | 2));
  out.WriteVarint32(static_cast<uint32_t>(value.size()));
  out.WriteString(value);
  return bytes;
}

std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

// One request, one response over the reflection stream; the response's bytes.
absl::StatusOr<std::string> ReflectionCall(const std::shared_ptr<grpc::ChannelInterface>& channel,
                                           const std::string& request_bytes) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, kReflectionMethod, &cq);
  void* tag;
  bool ok = false;
  auto step = [&](intptr_t expected) {
    return cq.Next(&tag, &ok) && ok && tag == reinterpret_cast<void*>(expected);
  };
  call->StartCall(reinterpret_cast<void*>(1));
  bool good = step(1);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  if (good) {
    call->Write(request, reinterpret_cast<void*>(2));
    good = step(2);
  }
  if (good) {
    call->WritesDone(reinterpret_cast<void*>(3));
    good = step(3);
  }
  if (good) {
    call->Read(&response, reinterpret_cast<void*>(4));
    good = step(4);
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (!status.ok()) {
    return absl::UnknownError(absl::StrCat("reflection call failed: ", status.error_message()));
  }
  if (!good) return absl::UnknownError("reflection stream ended early");
  return ToString(response);
}

// The length-delimited values (strings, bytes, sub-messages) of field `number` in `message`.
std::vector<std::string> Field(const std::string& message, int number) {
  std::vector<std::string> out;
  UnknownFieldSet fields;
  if (!fields.ParseFromString(message)) return out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(f.length_delimited());
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReflectionListServices(
    const std::shared_ptr<grpc::ChannelInterface>& channel) {
  absl::StatusOr<std::string> response = ReflectionCall(channel, EncodeReflectionRequest(7, ""));
  if (!response.ok()) return response.status();
  // ServerReflectionResponse.list_services_response (6) → ListServiceResponse.service (1) →
  // ServiceResponse.name (1).
  std::vector<std::string> names;
  for (const std::string& list : Field(*response, 6)) {
    for (const std::string& service : Field(list, 1)) {
      for (std::string& name : Field(service, 1)) names.push_back(std::move(name));
    }
  }
  return names;
}

absl::StatusOr<std::vector<std::string>> ReflectionFileContainingSymbol(
    const std::shared_ptr<grpc::ChannelInterface>& channel, const std::string& symbol) {
  absl::StatusOr<std::string> response =
      ReflectionCall(channel, EncodeReflectionRequest(4, symbol));
  if (!response.ok()) return response.status();
  // file_descriptor_response (4) → FileDescriptorResponse.file_descriptor_proto (1), bytes.
  std::vector<std::string> files;
  for (const std::string& fd : Field(*response, 4)) {
    for (std::string& file : Field(fd, 1)) files.push_back(std::move(file));
  }
  if (files.empty()) return absl::NotFoundError(absl::StrCat("no descriptor for ", symbol));
  return files;
}

absl::StatusOr<std::vector<std::string>> ReflectionServiceMethods(
    const std::shared_ptr<grpc::ChannelInterface>& channel, const std::string& symbol,
    const std::string& file_name) {
  absl::StatusOr<std::vector<std::string>> files = ReflectionFileContainingSymbol(channel, symbol);
  if (!files.ok()) return files.status();
  for (const std::string& bytes : *files) {
    google::protobuf::FileDescriptorProto file;
    if (!file.ParseFromString(bytes)) return absl::DataLossError("unparseable descriptor");
    if (file.name() != file_name) continue;
    if (file.service_size() != 1) {
      return absl::FailedPreconditionError(
          absl::StrCat(file_name, " defines ", file.service_size(), " services"));
    }
    std::vector<std::string> methods;
    for (const auto& method : file.service(0).method()) methods.push_back(method.name());
    return methods;
  }
  return absl::NotFoundError(absl::StrCat("no file ", file_name, " for ", symbol));
}

absl::StatusOr<std::string> HttpGet(const std::string& address, const std::string& path,
                                    const std::string& user_password) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError("address needs a port");
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError("bad port");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError("only IPv4 literals are supported");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{.tv_sec = 30, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", address));
  }
  const std::string auth =
      user_password.empty()
          ? ""
          : absl::StrCat("Authorization: Basic ", absl::Base64Escape(user_password), "\r\n");
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", address, "\r\n", auth, "\r\n");
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return absl::UnavailableError("send failed");
  }
  std::string reply;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t header_end = reply.find("\r\n\r\n");
  if (header_end == std::string::npos) return absl::DataLossError("no HTTP header");
  if (!absl::StartsWith(reply, "HTTP/1.1 200") && !absl::StartsWith(reply, "HTTP/1.0 200")) {
    return absl::UnknownError(absl::StrCat("HTTP: ", reply.substr(0, reply.find("\r\n"))));
  }
  return reply.substr(header_end + 4);  // an HTTP/1.0 request gets a plain, unchunked body
}

double MetricSum(const std::string& exposition, const std::string& name,
                 const std::map<std::string, std::string>& labels) {
  double sum = 0;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string::npos || line.substr(0, name_end) != name) continue;
    std::map<std::string, std::string> sample_labels;
    size_t value_start = name_end;
    if (line[name_end] == '{') {
      const size_t close = line.find('}', name_end);
      if (close == std::string::npos) continue;
      // Test metrics carry no commas or quotes inside label values.
      for (absl::string_view pair :
           absl::StrSplit(absl::string_view(line).substr(name_end + 1, close - name_end - 1), ',',
                          absl::SkipEmpty())) {
        const size_t eq = pair.find('=');
        if (eq == absl::string_view::npos) continue;
        absl::string_view value = pair.substr(eq + 1);
        if (value.size() >= 2) value = value.substr(1, value.size() - 2);
        sample_labels[std::string(pair.substr(0, eq))] = std::string(value);
      }
      value_start = close + 1;
    }
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = sample_labels.find(k);
      match &= it != sample_labels.end() && it->second == v;
    }
    if (!match) continue;
    std::vector<absl::string_view> rest =
        absl::StrSplit(absl::string_view(line).substr(value_start), ' ', absl::SkipEmpty());
    double value = 0;
    if (!rest.empty() && absl::SimpleAtod(rest[0], &value)) sum += value;
  }
  return sum;
}

}  // namespace tandem::testing
