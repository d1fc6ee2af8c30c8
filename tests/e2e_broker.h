// File: e2e_broker.h
//
// tandem-broker in end-to-end tests: query nodes and a broker started as processes on loopback
// (the IndexService calls of writes are in e2e_writes.h).
//
//   std::unique_ptr<ServerProcess> node = StartNode(dir, {"--live-shard", "c:0/1"});
//   std::unique_ptr<ServerProcess> broker = StartBroker({"--replicas", node->address()});
//   tandem::v1::WriteResponse written;
//   grpc::Status status = CallWrite(broker->address(), {IndexOperation(doc)}, &written);
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "index_builder/inverter.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tests/e2e_process.h"
#include "tests/e2e_writes.h"

namespace tandem::testing {

// tandem-server on `dir` with one CPU thread and no GPU, plus `extra`; null (and a test failure)
// when it does not start.
std::unique_ptr<ServerProcess> StartNode(const std::string& dir,
                                         std::vector<std::string> extra = {});

// Starts tandem-broker and waits until its health says SERVING, as a load balancer would before
// sending it queries: every shard has a healthy replica. The broker's first round of checks may
// miss a replica on a loaded machine; the next rounds, 100 ms apart, find it. A check gets 2 s, not
// the default 500 ms: a sanitized node on a busy machine is slow, not gone, and the tests that
// kill nodes count on the queries' UNAVAILABLE to eject them.
std::unique_ptr<ServerProcess> StartBroker(std::vector<std::string> args);

// The addresses of the nodes not null, comma-separated (--replicas).
std::string Addresses(const std::vector<std::unique_ptr<ServerProcess>>& nodes);

}  // namespace tandem::testing
