#include "tools/tandem_cli_write.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "clients/cli/health_client.h"
#include "clients/cli/output.h"
#include "grpcpp/client_context.h"

namespace tandem::cli {
namespace {

// A message also goes out once its operations pass this many bytes: a batch of large documents
// stays well under the node's --max-receive-message-bytes (16 MiB by default).
constexpr size_t kMaxMessageBytes = size_t{4} << 20;

// One Write call: messages go out as they fill; Finish ends the stream and takes the answer.
class WriteStream {
 public:
  WriteStream(tandem::v1::IndexService::Stub& stub, size_t batch_size, absl::Time deadline)
      : batch_size_(std::max<size_t>(batch_size, 1)) {
    context_.set_deadline(absl::ToChronoTime(deadline));
    writer_ = stub.Write(&context_, &result_.response);
  }

  // False once the node has ended the call (Finish says why).
  bool Add(tandem::v1::WriteOperation op) {
    request_bytes_ += op.ByteSizeLong();
    *request_.add_operations() = std::move(op);
    ++result_.sent;
    if (static_cast<size_t>(request_.operations_size()) < batch_size_ &&
        request_bytes_ < kMaxMessageBytes) {
      return true;
    }
    return Send();
  }

  absl::StatusOr<WriteResult> Finish() {
    if (!broken_ && request_.operations_size() > 0) Send();
    if (!broken_) writer_->WritesDone();
    const absl::Status status = FromGrpcStatus(writer_->Finish());
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(status.message(), " (", result_.sent, " operations sent)"));
    }
    return std::move(result_);
  }

 private:
  bool Send() {
    broken_ = !writer_->Write(request_);
    request_.Clear();
    request_bytes_ = 0;
    return !broken_;
  }

  const size_t batch_size_;
  grpc::ClientContext context_;
  WriteResult result_;
  tandem::v1::WriteRequest request_;
  size_t request_bytes_ = 0;
  std::unique_ptr<grpc::ClientWriter<tandem::v1::WriteRequest>> writer_;
  bool broken_ = false;
};

void AddFields(const std::vector<std::pair<std::string, std::string>>& from,
               google::protobuf::RepeatedPtrField<tandem::v1::DocumentField>* to) {
  for (const auto& [name, value] : from) {
    tandem::v1::DocumentField* field = to->Add();
    field->set_name(name);
    field->set_value(value);
  }
}

}  // namespace

absl::StatusOr<std::string> ResolveFormat(const std::string& format, const std::string& path) {
  if (format == "auto") {
    if (path == "-") {
      return absl::InvalidArgumentError("--format auto needs a file or directory, not stdin");
    }
    absl::StatusOr<index_builder::DetectedFormat> detected =
        index_builder::DetectDocumentFormat(path);
    if (!detected.ok()) return detected.status();
    return detected->format;
  }
  const std::vector<std::string> formats = index_builder::DocumentFormatNames();
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format must be auto or one of ", absl::StrJoin(formats, ", "), ", got '", format, "'"));
  }
  return format;
}

tandem::v1::WriteOperation IndexOperation(const index_builder::Document& doc) {
  tandem::v1::WriteOperation op;
  tandem::v1::IndexDocument* d = op.mutable_index();
  d->set_id(doc.external_id);
  d->set_text(doc.text);
  AddFields(doc.fields, d->mutable_fields());
  AddFields(doc.attributes, d->mutable_attributes());
  return op;
}

absl::StatusOr<WriteResult> StreamDocuments(tandem::v1::IndexService::Stub& stub,
                                            const DocumentSource& source, absl::Time deadline) {
  uint64_t bad = 0;
  index_builder::ReaderOptions options;
  // One thread: a pipe is read in order anyway, and documents go out in the order of the input.
  options.threads = 1;
  // The readers take a path; standard input is the process's /dev/stdin, which they read as the
  // pipe or file it is.
  const bool from_stdin = source.path == "-";
  const std::string path = from_stdin ? "/dev/stdin" : source.path;
  options.on_bad_document = [&bad, from_stdin](const absl::Status& status) {
    ++bad;
    absl::string_view message = status.message();
    // "/dev/stdin:7: no \"_id\"" reads as "stdin:7: ...", the input as the user named it.
    if (from_stdin) absl::ConsumePrefix(&message, "/dev/");
    std::fprintf(stderr, "tandem-cli: skipped %s\n", std::string(message).c_str());
  };
  absl::StatusOr<std::unique_ptr<index_builder::DocumentReader>> reader =
      index_builder::OpenDocumentReader(source.format, path, options);
  if (!reader.ok()) return reader.status();
  WriteStream stream(stub, source.batch_size, deadline);
  index_builder::Document doc;
  absl::Status read_status;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    if (!more.ok()) {
      read_status = more.status();
      break;
    }
    if (!*more || !stream.Add(IndexOperation(doc))) break;
  }
  absl::StatusOr<WriteResult> result = stream.Finish();
  if (!read_status.ok()) {
    // What was sent before stays acknowledged; the reading error is the one to report.
    return absl::Status(
        read_status.code(),
        absl::StrCat(read_status.message(), " (", result.ok() ? result->response.acknowledged() : 0,
                     " operations acknowledged before)"));
  }
  if (result.ok()) result->bad_documents = bad;
  return result;
}

absl::StatusOr<WriteResult> WriteOperations(
    tandem::v1::IndexService::Stub& stub, const std::vector<tandem::v1::WriteOperation>& operations,
    size_t batch_size, absl::Time deadline) {
  WriteStream stream(stub, batch_size, deadline);
  for (const tandem::v1::WriteOperation& op : operations) {
    if (!stream.Add(op)) break;
  }
  return stream.Finish();
}

std::string FormatWriteResult(const WriteResult& result, size_t max_errors) {
  const tandem::v1::WriteResponse& r = result.response;
  std::string text =
      absl::StrFormat("sent %d: acknowledged %d, stale %d, not found %d, refused %d", result.sent,
                      r.acknowledged(), r.stale(), r.not_found(), r.refused());
  if (result.bad_documents > 0) {
    absl::StrAppend(&text, "; ", result.bad_documents, " malformed documents skipped");
  }
  absl::StrAppend(&text, "\n");
  const size_t shown = std::min<size_t>(max_errors, r.errors_size());
  for (size_t i = 0; i < shown; ++i) {
    const tandem::v1::WriteError& e = r.errors(static_cast<int>(i));
    absl::StrAppend(&text, "error: operation ", e.operation(), " (id '", e.id(), "'): ",
                    StatusLine(absl::Status(static_cast<absl::StatusCode>(e.code()), e.message())),
                    "\n");
  }
  if (r.refused() > shown) absl::StrAppend(&text, "... ", r.refused() - shown, " more refused\n");
  return text;
}

nlohmann::json WriteResultJson(const WriteResult& result) {
  nlohmann::json json = ToJson(result.response);
  json["sent"] = result.sent;
  json["bad_documents"] = result.bad_documents;
  return json;
}

}  // namespace tandem::cli
