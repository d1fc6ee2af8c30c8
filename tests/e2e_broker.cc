// File: e2e_broker.cc
#include "tests/e2e_broker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/e2e_fixture.h"

namespace tandem::testing {

std::unique_ptr<ServerProcess> StartNode(const std::string& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--index", dir,   "--threads",        "1",
                                   "--gpu",   "off", "--queue-capacity", "512"};
  args.insert(args.end(), extra.begin(), extra.end());
  absl::StatusOr<std::unique_ptr<ServerProcess>> node = ServerProcess::Start(args);
  EXPECT_TRUE(node.ok()) << node.status();
  return node.ok() ? *std::move(node) : nullptr;
}

std::unique_ptr<ServerProcess> StartBroker(std::vector<std::string> args) {
  args.insert(args.end(), {"--health-interval", "100ms", "--refresh-interval", "100ms",
                           "--health-timeout", "2s"});
  absl::StatusOr<std::unique_ptr<ServerProcess>> broker =
      ServerProcess::Start(args, kE2eTimeout, TANDEM_BROKER_BINARY);
  EXPECT_TRUE(broker.ok()) << broker.status();
  if (!broker.ok()) return nullptr;
  if (!WaitForHealth((*broker)->address(), cli::ServingStatus::kServing,
                     "tandem.v1.SearchService")) {
    ADD_FAILURE() << "tandem-broker did not become SERVING within " << kE2eTimeout;
    return nullptr;
  }
  return *std::move(broker);
}

std::string Addresses(const std::vector<std::unique_ptr<ServerProcess>>& nodes) {
  std::vector<std::string> addresses;
  for (const auto& n : nodes) {
    if (n != nullptr) addresses.push_back(n->address());
  }
  return absl::StrJoin(addresses, ",");
}

tandem::v1::WriteOperation IndexOperation(const index_builder::Document& doc,
                                          std::optional<uint64_t> version) {
  tandem::v1::WriteOperation op;
  op.mutable_index()->set_id(doc.external_id);
  op.mutable_index()->set_text(doc.text);
  for (const auto& [name, value] : doc.fields) {
    tandem::v1::DocumentField* f = op.mutable_index()->add_fields();
    f->set_name(name);
    f->set_value(value);
  }
  if (version) op.set_version(*version);
  return op;
}

tandem::v1::WriteOperation DeleteOperation(const std::string& id) {
  tandem::v1::WriteOperation op;
  op.set_delete_id(id);
  return op;
}

namespace {

std::unique_ptr<tandem::v1::IndexService::Stub> IndexStub(const std::string& address) {
  return tandem::v1::IndexService::NewStub(NewChannel(address));
}

}  // namespace

grpc::Status CallWrite(const std::string& address,
                       const std::vector<tandem::v1::WriteOperation>& ops,
                       tandem::v1::WriteResponse* response, size_t per_message) {
  auto stub = IndexStub(address);
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  auto writer = stub->Write(&context, response);
  for (size_t start = 0; start < ops.size(); start += per_message) {
    tandem::v1::WriteRequest request;
    for (size_t i = start; i < std::min(ops.size(), start + per_message); ++i) {
      *request.add_operations() = ops[i];
    }
    if (!writer->Write(request)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

grpc::Status CallRefresh(const std::string& address, tandem::v1::RefreshResponse* response) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  return IndexStub(address)->Refresh(&context, tandem::v1::RefreshRequest(), response);
}

grpc::Status CallFlush(const std::string& address, tandem::v1::FlushResponse* response) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  return IndexStub(address)->Flush(&context, tandem::v1::FlushRequest(), response);
}

grpc::Status CallIndexStats(const std::string& address, tandem::v1::IndexStats* stats) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  return IndexStub(address)->GetIndexStats(&context, tandem::v1::GetIndexStatsRequest(), stats);
}

}  // namespace tandem::testing
