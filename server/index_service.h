// File: index_service.h
//
// tandem.v1.IndexService (proto/tandem/v1/index.proto): LoadIndex switches the node to another
// index without a restart (Server::LoadIndex). A load takes seconds (opening, checking and warming
// a large index), so the service is synchronous: it holds one of gRPC's sync threads, never a
// callback thread that other calls' reactors share.
//
//   IndexService service([&](const std::string& dir) { return server.LoadIndex(dir); },
//                        {.read_only = false});
//   builder.RegisterService(&service);
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "tandem/v1/index.grpc.pb.h"

namespace tandem::server {

struct IndexServiceOptions {
  // Refuse every call with FAILED_PRECONDITION (tandem-server --read-only).
  bool read_only = false;
};

class IndexService final : public tandem::v1::IndexService::Service {
 public:
  using LoadFn = std::function<absl::StatusOr<tandem::v1::LoadIndexResponse>(const std::string&)>;
  IndexService(LoadFn load, IndexServiceOptions options);

  grpc::Status LoadIndex(grpc::ServerContext* context, const tandem::v1::LoadIndexRequest* request,
                         tandem::v1::LoadIndexResponse* response) override;

 private:
  const LoadFn load_;
  const IndexServiceOptions options_;
};

}  // namespace tandem::server
