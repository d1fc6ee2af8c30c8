// File: e2e_writes.h
//
// The IndexService calls of end-to-end tests that write through a node or a broker: operations
// from documents, and one call each, with the tests' timeout.
//
//   tandem::v1::WriteResponse written;
//   grpc::Status status = CallWrite(node->address(), {IndexOperation(doc)}, &written);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "index_builder/inverter.h"
#include "tandem/v1/index.grpc.pb.h"

namespace tandem::testing {

tandem::v1::WriteOperation IndexOperation(const index_builder::Document& doc,
                                          std::optional<uint64_t> version = std::nullopt);
tandem::v1::WriteOperation DeleteOperation(const std::string& id,
                                           std::optional<uint64_t> version = std::nullopt);

// One Write call to `address` carrying `ops`, `per_message` operations a message.
grpc::Status CallWrite(const std::string& address,
                       const std::vector<tandem::v1::WriteOperation>& ops,
                       tandem::v1::WriteResponse* response, size_t per_message = 50);
grpc::Status CallRefresh(const std::string& address, tandem::v1::RefreshResponse* response);
grpc::Status CallFlush(const std::string& address, tandem::v1::FlushResponse* response);
grpc::Status CallIndexStats(const std::string& address, tandem::v1::IndexStats* stats);

}  // namespace tandem::testing
