#include "tests/e2e_fixture.h"

#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cpu/daat_engine.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/e2e_clients.h"
#include "tests/e2e_process.h"

namespace tandem::testing {

std::unique_ptr<E2eIndex> E2eIndex::Build(const CollectionSpec& spec) {
  std::unique_ptr<E2eIndex> e(new E2eIndex());
  e->dir_ = e->tmp_.path() + "/index";
  absl::Status built = BuildIndex(RandomDocuments(spec), e->dir_, spec.codec);
  EXPECT_TRUE(built.ok()) << built;
  if (!built.ok()) return nullptr;
  auto index = index::Index::Open(e->dir_);
  EXPECT_TRUE(index.ok()) << index.status();
  if (!index.ok()) return nullptr;
  e->index_ = *std::move(index);
  auto engine = cpu::DaatEngine::Create(*e->index_);
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return nullptr;
  e->engine_ = *std::move(engine);
  return e;
}

index::SearchResult E2eIndex::Expected(const tandem::v1::SearchRequest& request) const {
  index::Query query;
  switch (request.mode()) {
    case tandem::v1::QUERY_MODE_AND:
      query.mode = index::QueryMode::kAnd;
      break;
    case tandem::v1::QUERY_MODE_AND_OR:
      query.mode = index::QueryMode::kAndOr;
      break;
    default:
      query.mode = index::QueryMode::kOr;
      break;
  }
  query.k = request.k() == 0 ? 10 : request.k();
  if (request.bm25().has_k1()) query.bm25.k1 = request.bm25().k1();
  if (request.bm25().has_b()) query.bm25.b = request.bm25().b();
  if (request.has_terms()) {
    for (const tandem::v1::WeightedTerm& t : request.terms().terms()) {
      query.terms.push_back({t.term(), t.weight() == 0.0f ? 1.0f : t.weight()});
    }
  } else {
    std::vector<std::string> terms;
    index_->analyzer().Analyze(request.text(), &terms);
    for (std::string& t : terms) query.terms.push_back({std::move(t), 1.0f});
  }
  absl::StatusOr<index::SearchResult> result = engine_->Search(query, index::SearchContext{});
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *std::move(result) : index::SearchResult{};
}

void E2eIndex::ExpectSameHits(const tandem::v1::SearchResponse& response,
                              const index::SearchResult& expected) const {
  ASSERT_EQ(static_cast<size_t>(response.hits_size()), expected.hits.size());
  for (int i = 0; i < response.hits_size(); ++i) {
    const tandem::v1::Hit& hit = response.hits(i);
    EXPECT_EQ(hit.docid(), expected.hits[i].docid) << "rank " << i;
    EXPECT_EQ(hit.score(), expected.hits[i].score) << "rank " << i;
    EXPECT_EQ(hit.external_id(), index_->external_id(expected.hits[i].docid)) << "rank " << i;
  }
  EXPECT_EQ(response.stats().postings_decoded(), expected.stats.postings_decoded);
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

std::unique_ptr<tandem::v1::SearchService::Stub> NewStub(const std::string& address) {
  return tandem::v1::SearchService::NewStub(NewChannel(address));
}

void SetTimeout(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

namespace {

// One unary call of `stub` whose deadline is `timeout` from now.
template <typename Request, typename Response>
grpc::Status CallWithin(grpc::Status (tandem::v1::SearchService::Stub::*method)(
                            grpc::ClientContext*, const Request&, Response*),
                        tandem::v1::SearchService::Stub& stub, const Request& request,
                        Response* response, absl::Duration timeout) {
  grpc::ClientContext context;
  SetTimeout(context, timeout);
  return (stub.*method)(&context, request, response);
}

}  // namespace

grpc::Status CallSearch(tandem::v1::SearchService::Stub& stub,
                        const tandem::v1::SearchRequest& request,
                        tandem::v1::SearchResponse* response, absl::Duration timeout) {
  return CallWithin(&tandem::v1::SearchService::Stub::Search, stub, request, response, timeout);
}

grpc::Status CallSearchBatch(tandem::v1::SearchService::Stub& stub,
                             const tandem::v1::SearchBatchRequest& request,
                             tandem::v1::SearchBatchResponse* response, absl::Duration timeout) {
  return CallWithin(&tandem::v1::SearchService::Stub::SearchBatch, stub, request, response,
                    timeout);
}

std::vector<tandem::v1::SearchStreamResponse> PipelineOnStream(
    grpc::ClientReaderWriter<tandem::v1::SearchRequest, tandem::v1::SearchStreamResponse>& stream,
    const std::vector<tandem::v1::SearchRequest>& requests) {
  std::thread writer([&] {
    for (const tandem::v1::SearchRequest& r : requests) {
      if (!stream.Write(r)) break;
    }
    stream.WritesDone();
  });
  std::vector<tandem::v1::SearchStreamResponse> responses;
  for (tandem::v1::SearchStreamResponse response; stream.Read(&response);) {
    responses.push_back(response);
  }
  writer.join();
  return responses;
}

tandem::v1::SearchRequest TextRequest(const std::string& text, tandem::v1::QueryMode mode,
                                      uint32_t k) {
  tandem::v1::SearchRequest r;
  r.set_text(text);
  r.set_mode(mode);
  r.set_k(k);
  return r;
}

std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = std::string(dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool WaitForScrape(const std::string& metrics_address, const std::string& what,
                   const std::function<bool(const std::string&)>& done) {
  const absl::Time deadline = absl::Now() + kE2eTimeout;
  std::string last;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> scrape = HttpGet(metrics_address, "/metrics");
    if (scrape.ok()) {
      last = *scrape;
      if (done(last)) return true;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::string non_zero;
  for (absl::string_view line : absl::StrSplit(last, '\n')) {
    if (absl::StartsWith(line, "tandem_") && !absl::EndsWith(line, " 0")) {
      absl::StrAppend(&non_zero, line, "\n");
    }
  }
  ADD_FAILURE() << what << " never held; non-zero samples of the last scrape:\n" << non_zero;
  return false;
}

bool WaitForMetric(const std::string& metrics_address, const std::string& name,
                   const std::map<std::string, std::string>& labels,
                   const std::function<bool(double)>& done) {
  return WaitForScrape(metrics_address, name, [&](const std::string& scrape) {
    return done(MetricSum(scrape, name, labels));
  });
}

bool WaitForHealth(const std::string& address, cli::ServingStatus want,
                   const std::string& service) {
  auto channel = NewChannel(address);
  const absl::Time deadline = absl::Now() + kE2eTimeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<cli::ServingStatus> s = cli::CheckHealth(channel, service, absl::Seconds(10));
    if (s.ok() && *s == want) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

std::function<bool(double)> Equals(double v) {
  return [v](double x) { return x == v; };
}

}  // namespace tandem::testing
