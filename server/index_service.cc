#include "server/index_service.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/status_mapping.h"

namespace tandem::server {

IndexService::IndexService(IndexServiceTargets targets, IndexServiceOptions options)
    : targets_(std::move(targets)), options_(options) {}

absl::StatusOr<std::shared_ptr<live::LiveIndex>> IndexService::Live() const {
  if (options_.read_only) {
    return absl::FailedPreconditionError(
        "this node is read-only (--read-only): it takes no writes");
  }
  return targets_.live();
}

grpc::Status IndexService::LoadIndex(grpc::ServerContext* context,
                                     const tandem::v1::LoadIndexRequest* request,
                                     tandem::v1::LoadIndexResponse* response) {
  if (options_.read_only) {
    return rpc::ToGrpcStatus(absl::FailedPreconditionError(
        "this node is read-only (--read-only): it does not load indexes over gRPC; send it "
        "SIGHUP to re-read its --index"));
  }
  if (request->path().empty()) {
    return rpc::ToGrpcStatus(absl::InvalidArgumentError("LoadIndex needs a path"));
  }
  std::fprintf(stderr, "tandem-server: %s asks to load the index at %s\n", context->peer().c_str(),
               request->path().c_str());
  absl::StatusOr<tandem::v1::LoadIndexResponse> loaded = targets_.load(request->path());
  if (!loaded.ok()) {
    std::fprintf(stderr, "tandem-server: index not loaded, still serving the old one: %s\n",
                 std::string(loaded.status().message()).c_str());
    return rpc::ToGrpcStatus(loaded.status());
  }
  *response = *std::move(loaded);
  return grpc::Status::OK;
}

absl::StatusOr<live::Operation> ToOperation(const tandem::v1::WriteOperation& op) {
  std::optional<uint64_t> version;
  if (op.has_version()) version = op.version();
  switch (op.operation_case()) {
    case tandem::v1::WriteOperation::kIndex: {
      index_builder::Document doc;
      doc.external_id = op.index().id();
      doc.text = op.index().text();
      for (const tandem::v1::DocumentField& f : op.index().fields())
        doc.fields.emplace_back(f.name(), f.value());
      for (const tandem::v1::DocumentField& f : op.index().attributes()) {
        doc.attributes.emplace_back(f.name(), f.value());
      }
      return live::Operation::Index(std::move(doc), version);
    }
    case tandem::v1::WriteOperation::kDeleteId:
      return live::Operation::Delete(op.delete_id(), version);
    default:
      return absl::InvalidArgumentError(
          "an operation names neither a document nor an id to delete");
  }
}

grpc::Status IndexService::Write(grpc::ServerContext* context,
                                 grpc::ServerReader<tandem::v1::WriteRequest>* reader,
                                 tandem::v1::WriteResponse* response) {
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live = Live();
  if (!live.ok()) return rpc::ToGrpcStatus(live.status());
  tandem::v1::WriteRequest request;
  uint64_t position = 0;  // of the next operation in the stream
  auto refuse = [&](uint64_t operation, const std::string& id, const absl::Status& status) {
    response->set_refused(response->refused() + 1);
    if (static_cast<size_t>(response->errors_size()) >= kMaxListedErrors) return;
    tandem::v1::WriteError* e = response->add_errors();
    e->set_operation(operation);
    e->set_id(id.substr(0, 256));
    e->set_code(static_cast<int>(rpc::ToGrpcCode(status.code())));
    e->set_message(std::string(status.message()));
  };
  while (reader->Read(&request)) {
    if (context->IsCancelled()) break;
    std::vector<live::Operation> ops;
    std::vector<uint64_t> positions;
    ops.reserve(request.operations_size());
    for (const tandem::v1::WriteOperation& op : request.operations()) {
      absl::StatusOr<live::Operation> converted = ToOperation(op);
      if (converted.ok()) {
        ops.push_back(*std::move(converted));
        positions.push_back(position);
      } else {
        refuse(position, "", converted.status());
      }
      ++position;
    }
    absl::StatusOr<std::vector<absl::StatusOr<live::WriteOutcome>>> outcomes = (*live)->Write(ops);
    if (!outcomes.ok()) {
      // Nothing of this message was applied; what came before stays acknowledged.
      return rpc::ToGrpcStatus(absl::Status(
          outcomes.status().code(),
          absl::StrCat(outcomes.status().message(), " (", response->acknowledged(),
                       " operations of this stream were acknowledged before; the operations from ",
                       positions.empty() ? position : positions.front(), " on were not)")));
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const absl::StatusOr<live::WriteOutcome>& outcome = (*outcomes)[i];
      if (!outcome.ok()) {
        refuse(positions[i], ops[i].id(), outcome.status());
        continue;
      }
      response->set_acknowledged(response->acknowledged() + 1);
      if (*outcome == live::WriteOutcome::kStale) response->set_stale(response->stale() + 1);
      if (*outcome == live::WriteOutcome::kNotFound) {
        response->set_not_found(response->not_found() + 1);
      }
    }
  }
  if (context->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the write stream");
  }
  response->set_last_sequence((*live)->stats().last_sequence);
  return grpc::Status::OK;
}

grpc::Status IndexService::Refresh(grpc::ServerContext*, const tandem::v1::RefreshRequest*,
                                   tandem::v1::RefreshResponse* response) {
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live = Live();
  if (!live.ok()) return rpc::ToGrpcStatus(live.status());
  if (absl::Status s = (*live)->Refresh(); !s.ok()) return rpc::ToGrpcStatus(s);
  const live::LiveIndexStats stats = (*live)->stats();
  response->set_documents(stats.documents);
  response->set_segments(stats.segments);
  return grpc::Status::OK;
}

grpc::Status IndexService::Flush(grpc::ServerContext*, const tandem::v1::FlushRequest*,
                                 tandem::v1::FlushResponse* response) {
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live = Live();
  if (!live.ok()) return rpc::ToGrpcStatus(live.status());
  if (absl::Status s = (*live)->Flush(); !s.ok()) return rpc::ToGrpcStatus(s);
  response->set_generation((*live)->stats().generation);
  return grpc::Status::OK;
}

grpc::Status IndexService::ForceMerge(grpc::ServerContext*,
                                      const tandem::v1::ForceMergeRequest* request,
                                      tandem::v1::ForceMergeResponse* response) {
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live = Live();
  if (!live.ok()) return rpc::ToGrpcStatus(live.status());
  const size_t max_segments = request->max_segments() == 0 ? 1 : request->max_segments();
  if (absl::Status s = (*live)->ForceMerge(max_segments); !s.ok()) return rpc::ToGrpcStatus(s);
  const live::LiveIndexStats stats = (*live)->stats();
  response->set_segments(stats.segments);
  response->set_documents(stats.documents);
  return grpc::Status::OK;
}

grpc::Status IndexService::GetIndexStats(grpc::ServerContext*,
                                         const tandem::v1::GetIndexStatsRequest*,
                                         tandem::v1::IndexStats* response) {
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> live = Live();
  response->set_writable(live.ok());
  if (!live.ok()) return grpc::Status::OK;
  const live::LiveIndexStats stats = (*live)->stats();
  response->set_documents(stats.documents);
  response->set_deleted_documents(stats.deleted_documents);
  response->set_segments(stats.segments);
  response->set_buffered_operations(stats.buffered_operations);
  response->set_commit_generation(stats.generation);
  response->set_refreshes(stats.refreshes);
  response->set_last_sequence(stats.last_sequence);
  response->set_bytes_sealed(stats.bytes_sealed);
  response->set_bytes_merged(stats.bytes_merged);
  response->set_merges(stats.merges);
  return grpc::Status::OK;
}

}  // namespace tandem::server
