// File: e2e_writes.cc
#include "tests/e2e_writes.h"

#include <algorithm>

#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {

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

tandem::v1::WriteOperation DeleteOperation(const std::string& id, std::optional<uint64_t> version) {
  tandem::v1::WriteOperation op;
  op.set_delete_id(id);
  if (version) op.set_version(*version);
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
