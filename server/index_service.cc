#include "server/index_service.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/status_mapping.h"

namespace tandem::server {

IndexService::IndexService(LoadFn load, IndexServiceOptions options)
    : load_(std::move(load)), options_(options) {}

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
  absl::StatusOr<tandem::v1::LoadIndexResponse> loaded = load_(request->path());
  if (!loaded.ok()) {
    std::fprintf(stderr, "tandem-server: index not loaded, still serving the old one: %s\n",
                 std::string(loaded.status().message()).c_str());
    return rpc::ToGrpcStatus(loaded.status());
  }
  *response = *std::move(loaded);
  return grpc::Status::OK;
}

}  // namespace tandem::server
