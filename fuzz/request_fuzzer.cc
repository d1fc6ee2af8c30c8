// Fuzzer: raw request bytes through the query node's request path, as the service's raw methods
// take them: the bytes are parsed (wire.h) as the method's message, a SearchRequest or
// SearchBatchRequest is validated, analyzed and admitted by the QueryDispatcher, every admitted
// query runs on the CPU engine over a small fixed index, and each answer is built and serialized
// under a send limit. The first byte picks the method and the send limit. Besides crashes, it
// checks that every request gets exactly one answer, that nothing stays in flight, that a message
// that parsed re-parses from its own encoding, and that serialized answers parse back.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cpu/daat_engine.h"
#include "fuzz/fixed_index.h"
#include "fuzz/fuzz_util.h"
#include "google/protobuf/stubs/logging.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "index/index.h"
#include "prometheus/registry.h"
#include "scheduler/query_executor.h"
#include "server/query_dispatcher.h"
#include "server/query_metrics.h"
#include "server/request_validation.h"
#include "server/wire.h"
#include "tandem/v1/search.pb.h"

namespace tandem::fuzz {
namespace {

// Runs every query of a job at once on the calling thread: no threads, so a finding reproduces.
class InlineExecutor final : public scheduler::QueryExecutor {
 public:
  explicit InlineExecutor(const index::Engine& engine) : engine_(engine) {}
  absl::Status Submit(scheduler::QueryJob job) override {
    for (size_t i = 0; i < job.tasks.size(); ++i) {
      index::SearchContext context{.deadline = job.deadline, .cancelled = nullptr};
      job.on_done(i, scheduler::QueryOutcome{.result = engine_.Search(job.tasks[i].query, context),
                                             .engine = "cpu",
                                             .started = true});
    }
    return absl::OkStatus();
  }
  size_t queue_depth() const override { return 0; }
  size_t queue_capacity() const override { return 16; }
  std::vector<std::string> engines() const override { return {"cpu"}; }
  void Shutdown() override {}

 private:
  const index::Engine& engine_;
};

struct Node {
  Node() {
    // A request with strings that are not UTF-8 makes protobuf log an error; the node rate-limits
    // those lines (grpc_log.h), the fuzzer drops them.
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
    const std::string dir = ScratchDir() + "/request-index";
    TANDEM_FUZZ_CHECK(BuildFixedIndex("pfor", dir).ok());
    auto opened = index::Index::Open(dir);
    TANDEM_FUZZ_CHECK(opened.ok());
    index = *std::move(opened);
    auto created = cpu::DaatEngine::Create(*index, cpu::DaatEngineOptions{});
    TANDEM_FUZZ_CHECK(created.ok());
    engine = *std::move(created);
    executor = std::make_unique<InlineExecutor>(*engine);
    metrics = std::make_unique<server::QueryMetrics>(registry, server::BuildInfo{},
                                                     std::vector<std::string>{"cpu"});
    server::RequestLimits limits;
    limits.max_batch = 64;
    limits.max_batch_hits = 20000;
    dispatcher = std::make_unique<server::QueryDispatcher>(*index, *executor, *metrics, limits,
                                                           [](absl::string_view) {});
  }
  std::unique_ptr<index::Index> index;
  std::unique_ptr<cpu::DaatEngine> engine;
  std::unique_ptr<InlineExecutor> executor;
  prometheus::Registry registry;
  std::unique_ptr<server::QueryMetrics> metrics;
  std::unique_ptr<server::QueryDispatcher> dispatcher;
};

grpc::ByteBuffer ToBuffer(absl::string_view bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

// Parses what SerializeResponse wrote, as a client would.
template <typename Message>
void CheckSerialized(const Message& message, size_t limit) {
  grpc::ByteBuffer out;
  const absl::Status written = server::SerializeResponse(message, limit, out);
  if (!written.ok()) {
    TANDEM_FUZZ_CHECK(written.code() == absl::StatusCode::kResourceExhausted);
    TANDEM_FUZZ_CHECK(message.ByteSizeLong() > limit);
    return;
  }
  Message back;
  TANDEM_FUZZ_CHECK(server::ParseRequest(out, back).ok());
  TANDEM_FUZZ_CHECK(back.ByteSizeLong() == message.ByteSizeLong());
}

// Dispatches `requests` and checks that each gets exactly one answer, then serializes them.
void Run(Node& node, const std::vector<const tandem::v1::SearchRequest*>& requests, size_t limit) {
  std::vector<int> answers(requests.size(), 0);
  tandem::v1::SearchBatchResponse batch;
  for (size_t i = 0; i < requests.size(); ++i) batch.add_results();
  const absl::Status admitted = node.dispatcher->Dispatch(
      requests, {}, [&](size_t i, absl::StatusOr<tandem::v1::SearchResponse> response) {
        TANDEM_FUZZ_CHECK(i < answers.size());
        ++answers[i];
        if (response.ok()) {
          TANDEM_FUZZ_CHECK(response->request_id() == requests[i]->request_id());
          *batch.mutable_results(static_cast<int>(i))->mutable_response() = *std::move(response);
        } else {
          TANDEM_FUZZ_CHECK(!response.status().message().empty());
        }
      });
  for (int n : answers) TANDEM_FUZZ_CHECK(n == (admitted.ok() ? 1 : 0));
  TANDEM_FUZZ_CHECK(node.dispatcher->in_flight() == 0);
  TANDEM_FUZZ_CHECK(node.dispatcher->response_bytes_in_flight() == 0);
  CheckSerialized(batch, limit);
}

}  // namespace
}  // namespace tandem::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;  // NOLINT
  static fuzz::Node* node = new fuzz::Node();
  fuzz::Input input(data, size);
  const uint8_t selector = input.Byte();
  const size_t limit = size_t{64} << (selector >> 2 & 15);  // 64 bytes to 2 MB
  const fuzz::Bytes body(input.rest());
  const grpc::ByteBuffer bytes = fuzz::ToBuffer(body.view());
  switch (selector & 3) {
    case 0:
    case 1: {
      tandem::v1::SearchRequest request;
      if (!server::ParseRequest(bytes, request).ok()) return 0;
      tandem::v1::SearchRequest again;
      TANDEM_FUZZ_CHECK(
          server::ParseRequest(fuzz::ToBuffer(request.SerializeAsString()), again).ok());
      fuzz::Run(*node, {&request}, limit);
      break;
    }
    case 2: {
      tandem::v1::SearchBatchRequest request;
      if (!server::ParseRequest(bytes, request).ok()) return 0;
      if (!server::ValidateBatchSize(request, node->dispatcher->limits()).ok()) return 0;
      std::vector<const tandem::v1::SearchRequest*> requests;
      for (const tandem::v1::SearchRequest& r : request.requests()) requests.push_back(&r);
      fuzz::Run(*node, requests, limit);
      break;
    }
    default: {
      tandem::v1::GetIndexInfoRequest request;
      server::ParseRequest(bytes, request).IgnoreError();
      break;
    }
  }
  return 0;
}
