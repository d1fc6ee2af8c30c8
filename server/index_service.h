// File: index_service.h
//
// tandem.v1.IndexService (proto/tandem/v1/index.proto): writes to the serving index (Write,
// Refresh, Flush, GetIndexStats, on its live index: live/live_index.h), and LoadIndex, which
// switches the node to another index without a restart (Server::LoadIndex). A load takes seconds
// and a write waits for the disk, so the service is synchronous: it holds one of gRPC's sync
// threads, never a callback thread that other calls' reactors share.
//
//   IndexService service({.load = [&](const std::string& dir) { return server.LoadIndex(dir); },
//                         .live = [&] { return server.Serving()->live(); }},
//                        {.read_only = false});
//   builder.RegisterService(&service);
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "live/live_index.h"
#include "tandem/v1/index.grpc.pb.h"

namespace tandem::server {

struct IndexServiceOptions {
  // Refuse every call with FAILED_PRECONDITION (tandem-server --read-only).
  bool read_only = false;
};

// What the service acts on.
struct IndexServiceTargets {
  std::function<absl::StatusOr<tandem::v1::LoadIndexResponse>(const std::string&)> load;
  // The serving index's live index, or FAILED_PRECONDITION saying why the node takes no writes.
  std::function<absl::StatusOr<std::shared_ptr<live::LiveIndex>>()> live;
};

class IndexService final : public tandem::v1::IndexService::Service {
 public:
  // The most refused operations a WriteResponse lists (it counts them all).
  static constexpr size_t kMaxListedErrors = 1000;

  IndexService(IndexServiceTargets targets, IndexServiceOptions options);

  grpc::Status LoadIndex(grpc::ServerContext* context, const tandem::v1::LoadIndexRequest* request,
                         tandem::v1::LoadIndexResponse* response) override;
  grpc::Status Write(grpc::ServerContext* context,
                     grpc::ServerReader<tandem::v1::WriteRequest>* reader,
                     tandem::v1::WriteResponse* response) override;
  grpc::Status Refresh(grpc::ServerContext* context, const tandem::v1::RefreshRequest* request,
                       tandem::v1::RefreshResponse* response) override;
  grpc::Status Flush(grpc::ServerContext* context, const tandem::v1::FlushRequest* request,
                     tandem::v1::FlushResponse* response) override;
  grpc::Status ForceMerge(grpc::ServerContext* context,
                          const tandem::v1::ForceMergeRequest* request,
                          tandem::v1::ForceMergeResponse* response) override;
  grpc::Status GetIndexStats(grpc::ServerContext* context,
                             const tandem::v1::GetIndexStatsRequest* request,
                             tandem::v1::IndexStats* response) override;

 private:
  // The live index, or the status that refuses the call.
  absl::StatusOr<std::shared_ptr<live::LiveIndex>> Live() const;

  const IndexServiceTargets targets_;
  const IndexServiceOptions options_;
};

// The live index's operation for one of a Write's; INVALID_ARGUMENT for one that names neither a
// document nor an id to delete.
absl::StatusOr<live::Operation> ToOperation(const tandem::v1::WriteOperation& op);

}  // namespace tandem::server
