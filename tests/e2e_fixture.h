// File: e2e_fixture.h
//
// Shared pieces of the end-to-end tests: a small real index on disk (tests/test_collection.h,
// terms "t0".."t299", the default English analyzer, which leaves such terms unchanged), the same
// index opened in-process with cpu::DaatEngine as the oracle the server's answers must equal, and
// stubs.
//
//   auto index = E2eIndex::Build();
//   auto server = ServerProcess::Start({"--index", index->dir()});
//   auto stub = NewStub((*server)->address());
//   EXPECT_SAME_HITS(response, index->Expected(request));
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "clients/cli/health_client.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "index/engine.h"
#include "index/index.h"
#include "tandem/v1/search.grpc.pb.h"
#include "tests/test_collection.h"

namespace tandem::testing {

class E2eIndex {
 public:
  static std::unique_ptr<E2eIndex> Build(const CollectionSpec& spec = {});

  const std::string& dir() const { return dir_; }
  const index::Index& index() const { return *index_; }

  // The engine's answer to `request` (text analyzed with the index's analyzer, the same defaults
  // as the server: mode OR, k 10, weight 0 → 1, BM25 k1 0.9 and b 0.4).
  index::SearchResult Expected(const tandem::v1::SearchRequest& request) const;

  // Fails the current test unless `response` holds exactly `expected`'s hits, scores bit for bit,
  // with the external ids of the index.
  void ExpectSameHits(const tandem::v1::SearchResponse& response,
                      const index::SearchResult& expected) const;

 private:
  E2eIndex() = default;

  TempDir tmp_;
  std::string dir_;
  std::unique_ptr<index::Index> index_;
  std::unique_ptr<index::Engine> engine_;
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address);
std::unique_ptr<tandem::v1::SearchService::Stub> NewStub(const std::string& address);

void SetTimeout(grpc::ClientContext& context, absl::Duration timeout);

// One Search (SearchBatch) call on `stub` whose deadline is `timeout` from now.
grpc::Status CallSearch(tandem::v1::SearchService::Stub& stub,
                        const tandem::v1::SearchRequest& request,
                        tandem::v1::SearchResponse* response, absl::Duration timeout);
grpc::Status CallSearchBatch(tandem::v1::SearchService::Stub& stub,
                             const tandem::v1::SearchBatchRequest& request,
                             tandem::v1::SearchBatchResponse* response, absl::Duration timeout);

// Writes `requests` on `stream` from a second thread while this one reads the answers, so that
// the writer runs ahead of the reader as a pipelining client's does; returns the answers in the
// order they came, the stream left for the caller to Finish.
std::vector<tandem::v1::SearchStreamResponse> PipelineOnStream(
    grpc::ClientReaderWriter<tandem::v1::SearchRequest, tandem::v1::SearchStreamResponse>& stream,
    const std::vector<tandem::v1::SearchRequest>& requests);

tandem::v1::SearchRequest TextRequest(const std::string& text,
                                      tandem::v1::QueryMode mode = tandem::v1::QUERY_MODE_OR,
                                      uint32_t k = 10);

// Polls http://`metrics_address`/metrics until `done` holds for a scrape, up to kE2eTimeout. On
// timeout it fails the current test, naming `what` and listing the last scrape's non-zero tandem_
// samples, and returns false. Gauges a worker sets after it answered (busy workers, queue depths)
// are read this way: the answer can reach the client first.
bool WaitForScrape(const std::string& metrics_address, const std::string& what,
                   const std::function<bool(const std::string&)>& done);

// Polls until `done` holds for the sum of `name`{labels} (see MetricSum).
bool WaitForMetric(const std::string& metrics_address, const std::string& name,
                   const std::map<std::string, std::string>& labels,
                   const std::function<bool(double)>& done);

// A predicate for WaitForMetric: the value equals `v`.
std::function<bool(double)> Equals(double v);

// Polls grpc.health.v1 of the server at `address` (`service`; "" is the server as a whole) until it
// reads `want`, up to kE2eTimeout; false if it never does.
bool WaitForHealth(const std::string& address, cli::ServingStatus want,
                   const std::string& service = "");

// Full path of `name` in PATH, or "" when it is not installed.
std::string FindInPath(const std::string& name);

}  // namespace tandem::testing
