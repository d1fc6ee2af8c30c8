// File: e2e_clients.h
//
// Small clients end-to-end tests need besides the generated SearchService stub:
//   - server reflection (grpc.reflection.v1alpha), spoken through grpc::GenericStub with the two
//     messages encoded by hand, since gRPC's packages ship no reflection client headers;
//   - an HTTP/1.0 GET over a plain socket, to scrape /metrics without curl;
//   - a reader of the Prometheus text format that sums samples by name and label subset.
//
//   auto services = ReflectionListServices(channel);   // {"grpc.health.v1.Health", ...}
//   auto methods = ReflectionServiceMethods(channel, "grpc.health.v1.Health",
//                                           "grpc/health/v1/health.proto");  // {"Check", "Watch"}
//   auto scrape = HttpGet(server->metrics_address(), "/metrics");
//   double ok = MetricSum(*scrape, "tandem_queries_total", {{"code", "OK"}});
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"

namespace tandem::testing {

// Names of the services the server lists through reflection.
absl::StatusOr<std::vector<std::string>> ReflectionListServices(
    const std::shared_ptr<grpc::ChannelInterface>& channel);

// The serialized FileDescriptorProto(s) that define `symbol`, through reflection.
absl::StatusOr<std::vector<std::string>> ReflectionFileContainingSymbol(
    const std::shared_ptr<grpc::ChannelInterface>& channel, const std::string& symbol);

// The method names of the one service that reflection's file `file_name` (among the files that
// define `symbol` and their imports) defines; NOT_FOUND without such a file, FAILED_PRECONDITION
// when it defines other than one service.
absl::StatusOr<std::vector<std::string>> ReflectionServiceMethods(
    const std::shared_ptr<grpc::ChannelInterface>& channel, const std::string& symbol,
    const std::string& file_name);

// GET http://`address``path`, with HTTP basic auth when `user_password` ("user:password") is set;
// the body when the status is 200, else UNKNOWN with the status line.
absl::StatusOr<std::string> HttpGet(const std::string& address, const std::string& path,
                                    const std::string& user_password = "");

// Sum of the samples named `name` whose labels include all of `labels`; 0 when none match.
double MetricSum(const std::string& exposition, const std::string& name,
                 const std::map<std::string, std::string>& labels = {});

}  // namespace tandem::testing
