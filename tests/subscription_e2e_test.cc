// End-to-end tests of standing queries (tandem.v1.SubscriptionService) against the real
// tandem-server: subscriptions by text and by message, Match against a brute-force evaluation of
// the same predicates (match::PredicateMatches) on a small corpus, the errors, Watch streams (a
// slow watcher is told what it missed and the server's memory stays bounded), the subscriptions
// file across a restart and a damaged one, health, reflection, metrics and tandem-cli's verbs.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/sanitizers.h"
#include "clients/cli/health_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "match/model.h"
#include "match/predicate_parser.h"
#include "match/subscription_file.h"
#include "tandem/v1/subscription.grpc.pb.h"
#include "tests/e2e_clients.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
using base::kAddressSanitizer;

namespace {

using tandem::v1::Constraint;
using tandem::v1::SubscriptionService;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using Stub = SubscriptionService::Stub;

// The subscriptions of the brute-force test, by text. `legal` is also sent as messages.
struct Standing {
  std::string interface;
  std::string text;
};
const std::vector<Standing>& StandingQueries() {
  static const auto* queries = new std::vector<Standing>{
      {"alice", "terms contains \"t1 t2\" AND year >= 2001"},
      {"legal", "label = \"spam\" OR (score > 0.5 AND domain prefix \"enron\")"},
      {"bob", "domain substring \"ron\" AND year < 2005"},
      {"carol", "terms contains \"t3\" OR score <= 0.25"},
      {"dave", "year != 2003 AND label != \"ham\""},
  };
  return *queries;
}

// `legal`'s predicate as messages.
tandem::v1::Predicate LegalAsMessages() {
  tandem::v1::Predicate p;
  Constraint* c = p.add_filters()->add_constraints();
  c->set_name("label");
  c->set_op(Constraint::OP_EQ);
  c->mutable_value()->set_string_value("spam");
  tandem::v1::Filter* f = p.add_filters();
  c = f->add_constraints();
  c->set_name("score");
  c->set_op(Constraint::OP_GT);
  c->mutable_value()->set_double_value(0.5);
  c = f->add_constraints();
  c->set_name("domain");
  c->set_op(Constraint::OP_PREFIX);
  c->mutable_value()->set_string_value("enron");
  return p;
}

void SetAttribute(tandem::v1::Document& d, const std::string& name, int64_t v) {
  tandem::v1::Attribute* a = d.add_attributes();
  a->set_name(name);
  a->mutable_value()->set_int_value(v);
}
void SetAttribute(tandem::v1::Document& d, const std::string& name, double v) {
  tandem::v1::Attribute* a = d.add_attributes();
  a->set_name(name);
  a->mutable_value()->set_double_value(v);
}
void SetAttribute(tandem::v1::Document& d, const std::string& name, const std::string& v) {
  tandem::v1::Attribute* a = d.add_attributes();
  a->set_name(name);
  a->mutable_value()->set_string_value(v);
}

// A small corpus of mails: each attribute absent from some documents, text over t0..t5 (in the
// index's vocabulary, which the default analyzer leaves as is).
std::vector<tandem::v1::Document> Corpus() {
  static const char* const kDomains[] = {"enron.com", "ronco.org", "example.net"};
  static const char* const kLabels[] = {"spam", "ham"};
  std::vector<tandem::v1::Document> docs;
  uint32_t seed = 12345;
  auto next = [&seed] { return (seed = seed * 1103515245u + 12345u) >> 16; };
  for (int i = 0; i < 60; ++i) {
    tandem::v1::Document d;
    d.set_id(absl::StrCat("mail-", i));
    if (i % 7 != 0) SetAttribute(d, "year", static_cast<int64_t>(1998 + next() % 10));
    if (i % 5 != 1) SetAttribute(d, "domain", std::string(kDomains[next() % 3]));
    if (i % 3 != 2) SetAttribute(d, "label", std::string(kLabels[next() % 2]));
    if (i % 4 != 3) SetAttribute(d, "score", static_cast<double>(next() % 21) / 20.0);
    std::vector<std::string> words;
    for (int w = 0, n = static_cast<int>(next() % 6); w < n; ++w) {
      words.push_back(absl::StrCat("t", next() % 6));
    }
    d.set_text(absl::StrJoin(words, " "));
    docs.push_back(std::move(d));
  }
  return docs;
}

// A document's interfaces by evaluating every standing query's predicate on it.
std::vector<std::string> BruteForce(const tandem::v1::Document& d, const index::Analyzer& analyzer,
                                    const std::set<std::string>& interfaces) {
  std::vector<match::Attribute> attributes;
  for (const tandem::v1::Attribute& a : d.attributes()) {
    const tandem::v1::Value& v = a.value();
    attributes.push_back({a.name(), v.has_int_value() ? match::Value::Int(v.int_value())
                                    : v.has_double_value()
                                        ? match::Value::Double(v.double_value())
                                        : match::Value::String(v.string_value())});
  }
  absl::StatusOr<match::Event> event =
      match::MakeEvent(std::move(attributes), d.text(), &analyzer, match::Limits{});
  EXPECT_TRUE(event.ok()) << event.status();
  std::set<std::string> out;
  for (const Standing& s : StandingQueries()) {
    if (!interfaces.contains(s.interface)) continue;
    absl::StatusOr<match::Predicate> p = match::ParsePredicate(s.text);
    EXPECT_TRUE(p.ok()) << p.status();
    p = match::NormalizePredicate(*std::move(p), &analyzer, match::Limits{});
    EXPECT_TRUE(p.ok()) << p.status();
    if (event.ok() && p.ok() && match::PredicateMatches(*p, *event)) out.insert(s.interface);
  }
  return {out.begin(), out.end()};
}

class SubscriptionE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    index_ = E2eIndex::Build({.num_docs = 200}).release();
    ASSERT_NE(index_, nullptr);
  }
  static void TearDownTestSuite() { delete index_; }
  void SetUp() override { ASSERT_NE(index_, nullptr); }

  std::string SubscriptionsFile() const { return tmp_.path() + "/subscriptions"; }

  // A server over the index keeping its subscriptions in SubscriptionsFile().
  std::unique_ptr<ServerProcess> Start(std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"--index", index_->dir(), "--threads", "2", "--match-threads", "2",
                               "--subscriptions", SubscriptionsFile()});
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(args);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    stub_ = SubscriptionService::NewStub(NewChannel((*server)->address()));
    return *std::move(server);
  }

  static void Stop(std::unique_ptr<ServerProcess>& server) {
    server->Signal(SIGTERM);
    EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
  }

  absl::StatusOr<tandem::v1::SubscribeResponse> Subscribe(const std::string& interface,
                                                          const std::string& text) {
    tandem::v1::SubscribeRequest request;
    request.set_interface(interface);
    request.set_predicate_text(text);
    return Call(&Stub::Subscribe, request, tandem::v1::SubscribeResponse());
  }

  absl::StatusOr<tandem::v1::MatchResponse> Match(
      const std::vector<tandem::v1::Document>& documents) {
    tandem::v1::MatchRequest request;
    for (const tandem::v1::Document& d : documents) *request.add_documents() = d;
    return Call(&Stub::Match, request, tandem::v1::MatchResponse());
  }

  std::vector<tandem::v1::Subscription> List(const std::string& interface = "") {
    tandem::v1::ListSubscriptionsRequest request;
    request.set_interface(interface);
    absl::StatusOr<tandem::v1::ListSubscriptionsResponse> response =
        Call(&Stub::ListSubscriptions, request, tandem::v1::ListSubscriptionsResponse());
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    return {response->subscriptions().begin(), response->subscriptions().end()};
  }

  absl::Status Unsubscribe(uint64_t id) {
    tandem::v1::UnsubscribeRequest request;
    request.set_id(id);
    return Call(&Stub::Unsubscribe, request, tandem::v1::UnsubscribeResponse()).status();
  }

  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                             Response*),
                                const Request& request, Response response) {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    const absl::Status status =
        cli::FromGrpcStatus((stub_.get()->*method)(&context, request, &response));
    if (!status.ok()) return status;
    return response;
  }

  static E2eIndex* index_;
  TempDir tmp_;
  std::unique_ptr<Stub> stub_;
};

E2eIndex* SubscriptionE2eTest::index_ = nullptr;

// An open Watch stream, registered once its initial metadata is in.
struct WatchStream {
  WatchStream(Stub& stub, const std::string& interface) {
    tandem::v1::WatchRequest request;
    request.set_interface(interface);
    reader = stub.Watch(&context, request);
    reader->WaitForInitialMetadata();
  }
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<tandem::v1::WatchEvent>> reader;
};

TEST_F(SubscriptionE2eTest, MatchEqualsBruteForceOverSubscriptionsByTextAndByMessages) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  std::map<std::string, tandem::v1::SubscribeResponse> subscribed;
  for (const Standing& s : StandingQueries()) {
    absl::StatusOr<tandem::v1::SubscribeResponse> response;
    if (s.interface == "legal") {
      tandem::v1::SubscribeRequest request;
      request.set_interface(s.interface);
      *request.mutable_predicate() = LegalAsMessages();
      response = Call(&Stub::Subscribe, request, tandem::v1::SubscribeResponse());
    } else {
      response = Subscribe(s.interface, s.text);
    }
    ASSERT_TRUE(response.ok()) << s.interface << ": " << response.status();
    subscribed[s.interface] = *response;
  }
  // Normalized: `contains` analyzed into one constraint per term; the messages' form as the text's.
  EXPECT_EQ(subscribed["alice"].predicate_text(),
            "terms contains \"t1\" AND terms contains \"t2\" AND year >= 2001");
  EXPECT_EQ(subscribed["legal"].predicate_text(),
            "label = \"spam\" OR (score > 0.5 AND domain prefix \"enron\")");

  const std::vector<tandem::v1::Subscription> all = List();
  ASSERT_EQ(all.size(), StandingQueries().size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(all[i - 1].id(), all[i].id());
    }
    const tandem::v1::SubscribeResponse& s = subscribed[all[i].interface()];
    EXPECT_EQ(all[i].id(), s.id());
    EXPECT_EQ(all[i].predicate_text(), s.predicate_text());
  }
  const std::vector<tandem::v1::Subscription> alice = List("alice");
  ASSERT_EQ(alice.size(), 1u);
  EXPECT_EQ(alice[0].predicate().filters(0).constraints_size(), 3);
  EXPECT_TRUE(List("nobody").empty());

  std::set<std::string> live;
  for (const Standing& s : StandingQueries()) live.insert(s.interface);
  const std::vector<tandem::v1::Document> corpus = Corpus();
  auto expect_brute_force = [&] {
    // Two calls, so that the second also sees what the first one left behind.
    for (size_t start : {size_t{0}, corpus.size() / 2}) {
      const std::vector<tandem::v1::Document> part(
          corpus.begin() + start, start == 0 ? corpus.begin() + corpus.size() / 2 : corpus.end());
      absl::StatusOr<tandem::v1::MatchResponse> response = Match(part);
      ASSERT_TRUE(response.ok()) << response.status();
      EXPECT_EQ(response->engine(), "cpu");
      ASSERT_EQ(static_cast<size_t>(response->matches_size()), part.size());
      for (size_t i = 0; i < part.size(); ++i) {
        const tandem::v1::DocumentMatch& m = response->matches(static_cast<int>(i));
        EXPECT_EQ(m.document_id(), part[i].id());
        EXPECT_EQ(std::vector<std::string>(m.interfaces().begin(), m.interfaces().end()),
                  BruteForce(part[i], index_->index().analyzer(), live))
            << part[i].DebugString();
      }
    }
  };
  expect_brute_force();
  // Some documents match each interface, and some match none: the corpus tells them apart.
  for (const std::string& interface : live) {
    size_t hits = 0;
    for (const tandem::v1::Document& d : corpus) {
      const std::vector<std::string> expected = BruteForce(d, index_->index().analyzer(), live);
      hits += std::count(expected.begin(), expected.end(), interface);
    }
    EXPECT_GT(hits, 0u) << interface;
    EXPECT_LT(hits, corpus.size()) << interface;
  }

  ASSERT_TRUE(Unsubscribe(subscribed["alice"].id()).ok());
  live.erase("alice");
  expect_brute_force();
  EXPECT_EQ(List().size(), StandingQueries().size() - 1);
  const absl::Status again = Unsubscribe(subscribed["alice"].id());
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound) << again;
  EXPECT_EQ(Unsubscribe(987654321).code(), absl::StatusCode::kNotFound);

  const std::string scrape = HttpGet(server->metrics_address(), "/metrics").value_or("");
  EXPECT_EQ(MetricSum(scrape, "tandem_subscriptions"), 4);
  EXPECT_EQ(MetricSum(scrape, "tandem_subscription_changes_total",
                      {{"op", "subscribe"}, {"outcome", "OK"}}),
            5);
  EXPECT_EQ(MetricSum(scrape, "tandem_subscription_changes_total",
                      {{"op", "unsubscribe"}, {"outcome", "NOT_FOUND"}}),
            2);
  EXPECT_EQ(MetricSum(scrape, "tandem_match_documents_total", {{"engine", "cpu"}}),
            2.0 * corpus.size());
  EXPECT_EQ(MetricSum(scrape, "tandem_match_duration_seconds_count", {{"engine", "cpu"}}), 4);
  Stop(server);
}

TEST_F(SubscriptionE2eTest, BadRequestsNameTheProblem) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<tandem::v1::SubscribeResponse> bad = Subscribe("alice", "year >= ");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), StartsWith("predicate_text: "));

  bad = Subscribe("alice", "domain < \"enron.com\"");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("filter 1, constraint 1"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("compares numbers"));

  tandem::v1::SubscribeRequest request;
  request.set_interface("alice");
  *request.mutable_predicate() = LegalAsMessages();
  request.mutable_predicate()->mutable_filters(1)->mutable_constraints(0)->set_op(
      Constraint::OP_UNSPECIFIED);
  bad = Call(&Stub::Subscribe, request, tandem::v1::SubscribeResponse());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "filter 2, constraint 1 (score): the operator is not set");

  bad = Subscribe("", "year = 1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);

  std::vector<tandem::v1::Document> many(1025);
  absl::StatusOr<tandem::v1::MatchResponse> match = Match(many);
  EXPECT_EQ(match.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(match.status().message()),
              HasSubstr("1025 documents, above the limit of 1024"));

  std::vector<tandem::v1::Document> reserved = {Corpus()[0], Corpus()[1]};
  SetAttribute(reserved[1], "terms", std::string("x"));
  match = Match(reserved);
  EXPECT_EQ(match.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(match.status().message()), StartsWith("document 2 (id \"mail-1\"): "));

  // Nothing was added by the refused calls.
  EXPECT_TRUE(List().empty());
  Stop(server);
}

TEST_F(SubscriptionE2eTest, PredicatesThatAreNotUtf8AreRefusedAndListingStaysReadable) {
  // A file as older builds left it: mallory's `s = "\xff"` stored beside a good subscription.
  {
    match::SubscriptionSnapshot old;
    match::Predicate bad;
    bad.filters.push_back(
        match::Filter{{match::Constraint{"s", match::Op::kEq, match::Value::String("\xff")}}});
    old.records.push_back(match::SubscriptionRecord{1, "mallory", bad});
    old.records.push_back(match::SubscriptionRecord{
        2, "alice",
        *match::NormalizePredicate(*match::ParsePredicate("year = 2001"), nullptr, {})});
    old.next_id = 3;
    ASSERT_TRUE(match::WriteSubscriptionFile(SubscriptionsFile(), old).ok());
  }
  auto server = Start();
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Stderr(), HasSubstr("dropped subscription 1 of interface \"mallory\""));
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server->address()});
    absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_CLI_BINARY, args, kE2eTimeout);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(ProcessResult{});
  };
  ProcessResult run = cli({"subscribe", "--interface", "mallory", "s = \"\\xff\""});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tandem-cli: INVALID_ARGUMENT: predicate_text: "));
  EXPECT_THAT(run.err, HasSubstr("not valid UTF-8"));
  run = cli({"subscribe", "--interface", "mallory", "`\\xc3` = 1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("INVALID_ARGUMENT"));
  // Every client can still list; only alice's is there, before and after a restart.
  run = cli({"subscriptions"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "2  alice  year = 2001\n");
  Stop(server);
  server = Start();
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Stderr(), Not(HasSubstr("dropped")));
  run = cli({"subscriptions"});
  EXPECT_EQ(run.out, "2  alice  year = 2001\n");
  // Whole characters spelled by escapes are kept, and listed as the characters.
  run = cli({"subscribe", "--interface", "mallory", "s = \"caf\\xc3\\xa9\""});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "3  s = \"caf\xc3\xa9\"\n");
  EXPECT_EQ(List().size(), 2u);
  Stop(server);
}

TEST_F(SubscriptionE2eTest, AFailedWriteIsUnavailableWithoutPathsAndTheLogHasTheReason) {
  // The subscriptions file's directory removed under a running node: no write can succeed.
  const std::string dir = tmp_.path() + "/d";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  absl::StatusOr<std::unique_ptr<ServerProcess>> started = ServerProcess::Start(
      {"--index", index_->dir(), "--threads", "2", "--subscriptions", dir + "/subs.bin"});
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<ServerProcess> server = *std::move(started);
  stub_ = SubscriptionService::NewStub(NewChannel(server->address()));
  absl::StatusOr<tandem::v1::SubscribeResponse> kept = Subscribe("alice", "year = 1");
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::filesystem::remove_all(dir);

  absl::StatusOr<tandem::v1::SubscribeResponse> refused = Subscribe("bob", "year = 2");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  const std::string message(refused.status().message());
  EXPECT_THAT(message, HasSubstr("could not be saved"));
  EXPECT_THAT(message, Not(HasSubstr(tmp_.path())));
  EXPECT_THAT(message, Not(HasSubstr(std::to_string(server->pid()))));
  const absl::Status unsubscribed = Unsubscribe(kept->id());
  EXPECT_EQ(unsubscribed.code(), absl::StatusCode::kUnavailable) << unsubscribed;
  EXPECT_THAT(std::string(unsubscribed.message()), Not(HasSubstr(tmp_.path())));
  // Neither change was made, and the operator's log names the file and the error.
  const std::vector<tandem::v1::Subscription> listed = List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].interface(), "alice");
  EXPECT_THAT(server->Stderr(), HasSubstr("cannot save subscriptions to " + dir + "/subs.bin"));
  EXPECT_EQ(Unsubscribe(12345).code(), absl::StatusCode::kNotFound);  // still its own code
  Stop(server);
}

TEST_F(SubscriptionE2eTest, WatchStreamsTheMatchedDocumentsOfItsInterface) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(Subscribe("alice", "year >= 2001").ok());
  ASSERT_TRUE(Subscribe("bob", "label = \"spam\"").ok());
  WatchStream alice(*stub_, "alice");
  WatchStream bob(*stub_, "bob");
  WaitForMetric(server->metrics_address(), "tandem_watch_streams", {}, Equals(2));

  const std::vector<tandem::v1::Document> corpus = Corpus();
  ASSERT_TRUE(Match(corpus).ok());
  std::vector<std::string> want_alice, want_bob;
  for (const tandem::v1::Document& d : corpus) {
    for (const tandem::v1::Attribute& a : d.attributes()) {
      if (a.name() == "year" && a.value().int_value() >= 2001) want_alice.push_back(d.id());
      if (a.name() == "label" && a.value().string_value() == "spam") want_bob.push_back(d.id());
    }
  }
  ASSERT_FALSE(want_alice.empty());
  ASSERT_FALSE(want_bob.empty());
  tandem::v1::WatchEvent event;
  for (const std::string& id : want_alice) {
    ASSERT_TRUE(alice.reader->Read(&event));
    EXPECT_EQ(event.document_id(), id);
    EXPECT_EQ(event.dropped(), 0u);
    // The document's attributes, sorted by name.
    for (int i = 1; i < event.attributes_size(); ++i) {
      EXPECT_LT(event.attributes(i - 1).name(), event.attributes(i).name());
    }
  }
  for (const std::string& id : want_bob) {
    ASSERT_TRUE(bob.reader->Read(&event));
    EXPECT_EQ(event.document_id(), id);
  }

  // A cancelled stream leaves; the server drains with one still open, ending it with OK.
  alice.context.TryCancel();
  EXPECT_EQ(alice.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  WaitForMetric(server->metrics_address(), "tandem_watch_streams", {}, Equals(1));
  server->Signal(SIGTERM);
  EXPECT_FALSE(bob.reader->Read(&event));
  const grpc::Status ended = bob.reader->Finish();
  EXPECT_TRUE(ended.ok()) << ended.error_message();
  EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
}

// A watcher that does not read: the server queues --watch-queue events for it and drops the rest,
// counting them, instead of holding every matched document; once it reads again it learns how many
// it missed.
TEST_F(SubscriptionE2eTest, SlowWatcherIsToldWhatItMissedAndTheServerDoesNotGrow) {
  auto server = Start({"--watch-queue", "4"});
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(Subscribe("alice", "year >= 0").ok());
  // Documents of about 45 kB each in a WatchEvent: 200 attributes of 200 bytes.
  auto big = [](const std::string& id) {
    tandem::v1::Document d;
    d.set_id(id);
    SetAttribute(d, "year", int64_t{2001});
    for (int a = 0; a < 200; ++a) {
      SetAttribute(d, absl::StrCat("pad", a), std::string(200, static_cast<char>('a' + a % 26)));
    }
    return d;
  };
  auto publish = [&](const std::string& prefix, int count) {
    constexpr int kPerCall = 100;
    for (int start = 0; start < count; start += kPerCall) {
      std::vector<tandem::v1::Document> docs;
      for (int i = start; i < std::min(count, start + kPerCall); ++i) {
        docs.push_back(big(absl::StrCat(prefix, i)));
      }
      absl::StatusOr<tandem::v1::MatchResponse> response = Match(docs);
      ASSERT_TRUE(response.ok()) << response.status();
    }
  };
  auto resident = [&] {
    return MetricSum(HttpGet(server->metrics_address(), "/metrics").value_or(""),
                     "process_resident_memory_bytes");
  };
  publish("warm-", 200);  // nobody watches: the allocator's working set for such calls
  const double before = resident();

  WatchStream slow(*stub_, "alice");
  constexpr int kPublished = 3000;  // about 135 MB of events, were they all kept
  publish("doc-", kPublished);
  WaitForMetric(server->metrics_address(), "tandem_watch_dropped_total", {},
                [](double v) { return v > 0; });
  // The server gives freed memory back when idle (every 5 s): the least it holds over a few
  // seconds is what it keeps. Were every event kept, it would be about 100 MB more.
  // Under AddressSanitizer freed memory sits in its quarantine (256 MB by default) and the
  // resident size says nothing about what the server keeps: there only the drops are checked.
  if (!kAddressSanitizer) {
    constexpr double kBound = 40 << 20;
    double after = resident();
    for (const absl::Time end = absl::Now() + absl::Seconds(12);
         after - before >= kBound / 2 && absl::Now() < end;) {
      absl::SleepFor(absl::Milliseconds(500));
      after = std::min(after, resident());
    }
    EXPECT_LT(after - before, kBound) << "before " << before << ", after " << after;
  }

  // Reading again: what was queued arrives, then the documents matched once the queue has room;
  // the first of those reports the drops not reported yet. Markers go out until one is read.
  uint64_t received = 0, dropped = 0;
  tandem::v1::WatchEvent event;
  std::atomic<bool> marker_read{false};
  std::atomic<int> markers{0};
  std::thread marking([&] {
    while (!marker_read.load()) {
      publish(absl::StrCat("marker-", markers.load(), "-"), 1);
      ++markers;
      absl::SleepFor(absl::Milliseconds(200));
    }
  });
  auto read_until = [&](const std::string& prefix) {
    while (slow.reader->Read(&event)) {
      ++received;
      dropped += event.dropped();
      if (absl::StartsWith(event.document_id(), prefix)) return true;
    }
    return false;
  };
  const bool marked = read_until("marker-");
  marker_read = true;
  marking.join();
  ASSERT_TRUE(marked);
  // The reader keeps up now: the last document and the markers after the first one all arrive.
  publish("end-", 1);
  ASSERT_TRUE(read_until("end-"));
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(received, static_cast<uint64_t>(kPublished));
  EXPECT_EQ(received + dropped, static_cast<uint64_t>(kPublished + markers.load() + 1));
  EXPECT_EQ(MetricSum(HttpGet(server->metrics_address(), "/metrics").value_or(""),
                      "tandem_watch_dropped_total"),
            static_cast<double>(dropped));
  slow.context.TryCancel();
  slow.reader->Finish().IgnoreError();
  Stop(server);
}

// Many watchers that do not read share one bound (--watch-queue-bytes, reserved from the memory
// breaker) instead of each holding --watch-queue events: the node's memory stays put, the slow
// streams lose events, and a watcher that keeps reading loses next to nothing.
TEST_F(SubscriptionE2eTest, IdleWatchersShareOneBoundAndTheSlowestLoseEventsFirst) {
  constexpr uint64_t kBound = 16 << 20;
  auto server = Start({"--watch-queue-bytes", absl::StrCat(kBound)});
  ASSERT_NE(server, nullptr);
  // Each idle watcher its own documents (year w), so that none shares another's events; the fast
  // one reads those of the first.
  constexpr int kIdle = 16;
  for (int w = 0; w < kIdle; ++w) {
    ASSERT_TRUE(Subscribe(absl::StrCat("idle-", w), absl::StrCat("year = ", w)).ok());
  }
  ASSERT_TRUE(Subscribe("fast", "year = 0").ok());
  // Documents of about 45 kB each in a WatchEvent: 200 attributes of 200 bytes.
  auto big = [](const std::string& id, int64_t year) {
    tandem::v1::Document d;
    d.set_id(id);
    SetAttribute(d, "year", year);
    for (int a = 0; a < 200; ++a) {
      SetAttribute(d, absl::StrCat("pad", a), std::string(200, static_cast<char>('a' + a % 26)));
    }
    return d;
  };
  auto publish = [&](const std::string& prefix, int count) {
    constexpr int kPerCall = 10;
    for (int start = 0; start < count; start += kPerCall) {
      std::vector<tandem::v1::Document> docs;
      for (int i = start; i < std::min(count, start + kPerCall); ++i) {
        docs.push_back(big(absl::StrCat(prefix, i), i % kIdle));
      }
      absl::StatusOr<tandem::v1::MatchResponse> response = Match(docs);
      ASSERT_TRUE(response.ok()) << response.status();
    }
  };
  auto scrape = [&] { return HttpGet(server->metrics_address(), "/metrics").value_or(""); };
  publish("warm-", 100);  // nobody watches: the allocator's working set for such calls
  const double before = MetricSum(scrape(), "process_resident_memory_bytes");

  std::vector<std::unique_ptr<WatchStream>> idle;
  for (int w = 0; w < kIdle; ++w) {
    idle.push_back(std::make_unique<WatchStream>(*stub_, absl::StrCat("idle-", w)));
  }
  WatchStream fast(*stub_, "fast");
  std::atomic<uint64_t> fast_received{0}, fast_dropped{0};
  std::atomic<bool> fast_done{false};
  std::thread reader([&] {
    tandem::v1::WatchEvent event;
    while (fast.reader->Read(&event)) {
      fast_dropped += event.dropped();
      if (absl::StartsWith(event.document_id(), "end")) break;
      ++fast_received;
    }
    fast_done = true;
  });
  // 200 events of 45 kB for each idle watcher: 145 MB in all, were they all kept.
  constexpr int kPublished = 200 * kIdle;
  publish("doc-", kPublished);
  const std::string metrics = scrape();
  EXPECT_LE(MetricSum(metrics, "tandem_memory_breaker_bytes", {{"holder", "watch_queues"}}),
            static_cast<double>(kBound));
  EXPECT_GT(MetricSum(metrics, "tandem_memory_breaker_bytes", {{"holder", "watch_queues"}}), 0);
  // Each idle watcher can hold a share of the bound only: most of their events were dropped.
  EXPECT_GT(MetricSum(metrics, "tandem_watch_dropped_total"), kPublished / 4.0);
  if (!kAddressSanitizer) {
    constexpr double kGrowth = 45 << 20;
    double after = MetricSum(scrape(), "process_resident_memory_bytes");
    for (const absl::Time end = absl::Now() + absl::Seconds(12);
         after - before >= kGrowth / 2 && absl::Now() < end;) {
      absl::SleepFor(absl::Milliseconds(500));
      after = std::min(after, MetricSum(scrape(), "process_resident_memory_bytes"));
    }
    std::printf("resident with %d idle watchers: %.0f MB before, %.0f MB after %d events each\n",
                kIdle, before / 1e6, after / 1e6, kPublished / kIdle);
    EXPECT_LT(after - before, kGrowth) << "before " << before << ", after " << after;
  }
  // Markers until the reader has one (a marker may itself be dropped).
  for (int marker = 0; marker < 60 && !fast_done.load(); ++marker) {
    publish(absl::StrCat("end-", marker, "-"), 1);
    for (int i = 0; i < 10 && !fast_done.load(); ++i) absl::SleepFor(absl::Milliseconds(50));
  }
  reader.join();
  // The reader kept up: the idle streams, holding the most, lost the events instead.
  constexpr uint64_t kFast = kPublished / kIdle;
  EXPECT_GE(fast_received.load(), kFast * 9 / 10) << fast_dropped.load() << " dropped";
  EXPECT_GE(fast_received.load() + fast_dropped.load(), kFast);
  for (auto& stream : idle) stream->context.TryCancel();
  fast.context.TryCancel();
  for (auto& stream : idle) stream->reader->Finish().IgnoreError();
  fast.reader->Finish().IgnoreError();
  Stop(server);
}

TEST_F(SubscriptionE2eTest, SubscriptionsSurviveARestartAndADamagedFileStopsTheServer) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  std::vector<uint64_t> ids;
  for (const Standing& s : StandingQueries()) {
    absl::StatusOr<tandem::v1::SubscribeResponse> response = Subscribe(s.interface, s.text);
    ASSERT_TRUE(response.ok()) << response.status();
    ids.push_back(response->id());
  }
  ASSERT_TRUE(Unsubscribe(ids[1]).ok());
  const std::vector<tandem::v1::Subscription> kept = List();
  ASSERT_EQ(kept.size(), ids.size() - 1);
  // Killed, not drained: every change was on disk when its call returned.
  server->Signal(SIGKILL);
  server->WaitForExit();

  server = Start();
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Stderr(), HasSubstr("4 subscriptions kept in " + SubscriptionsFile()));
  const std::vector<tandem::v1::Subscription> reloaded = List();
  ASSERT_EQ(reloaded.size(), kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(reloaded[i].id(), kept[i].id());
    EXPECT_EQ(reloaded[i].interface(), kept[i].interface());
    EXPECT_EQ(reloaded[i].predicate_text(), kept[i].predicate_text());
  }
  // Ids are never reused, not even the removed one's.
  absl::StatusOr<tandem::v1::SubscribeResponse> next = Subscribe("erin", "year = 2000");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_GT(next->id(), *std::max_element(ids.begin(), ids.end()));
  absl::StatusOr<tandem::v1::MatchResponse> match = Match(Corpus());
  ASSERT_TRUE(match.ok()) << match.status();
  Stop(server);

  // One byte flipped: the server refuses to start, in one line naming the file.
  {
    std::fstream file(SubscriptionsFile(), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good());
    file.seekg(0, std::ios::end);
    const std::streamoff size = file.tellg();
    ASSERT_GT(size, 16);
    char byte;
    file.seekg(size / 2);
    file.get(byte);
    file.seekp(size / 2);
    file.put(static_cast<char>(byte ^ 0x20));
  }
  absl::StatusOr<ProcessResult> run = RunProcess(
      TANDEM_SERVER_BINARY, {"--index", index_->dir(), "--subscriptions", SubscriptionsFile(),
                             "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1) << run->err;
  EXPECT_THAT(run->err, StartsWith("tandem-server: cannot open subscriptions: "));
  EXPECT_THAT(run->err, HasSubstr(SubscriptionsFile()));
  EXPECT_EQ(std::count(run->err.begin(), run->err.end(), '\n'), 1) << run->err;
  EXPECT_EQ(run->out, "");
}

TEST_F(SubscriptionE2eTest, WithoutAFileSubscriptionsLiveInMemoryAndStartupSaysSo) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--index", index_->dir(), "--threads", "2"});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Stderr(), HasSubstr("0 subscriptions in memory only"));

  // Health, reflection: the service is there beside SearchService.
  auto channel = NewChannel((*server)->address());
  absl::StatusOr<cli::ServingStatus> health =
      cli::CheckHealth(channel, "tandem.v1.SubscriptionService", kE2eTimeout);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, cli::ServingStatus::kServing);
  absl::StatusOr<std::vector<std::string>> services = ReflectionListServices(channel);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, Contains("tandem.v1.SubscriptionService"));
  absl::StatusOr<std::vector<std::string>> methods = ReflectionServiceMethods(
      channel, "tandem.v1.SubscriptionService", "tandem/v1/subscription.proto");
  ASSERT_TRUE(methods.ok()) << methods.status();
  EXPECT_THAT(*methods, ::testing::UnorderedElementsAre("Subscribe", "Unsubscribe",
                                                        "ListSubscriptions", "Match", "Watch"));
}

TEST_F(SubscriptionE2eTest, BadSubscriptionFlagsStopTheServer) {
  absl::StatusOr<ProcessResult> run =
      RunProcess(TANDEM_SERVER_BINARY, {"--index", index_->dir(), "--match-engine", "fpga"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2) << run->err;
  EXPECT_EQ(run->err, "tandem-server: --match-engine: must be auto, cpu or gpu, got 'fpga'\n");

  run = RunProcess(TANDEM_SERVER_BINARY,
                   {"--index", index_->dir(), "--max-constraints-per-filter", "300", "--listen",
                    "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1) << run->err;
  EXPECT_THAT(run->err, HasSubstr("max_constraints_per_filter must be between 1 and 255"));

  // Where the build or the machine has no GPU matcher, asking for one stops the server.
  absl::StatusOr<std::unique_ptr<ServerProcess>> gpu =
      ServerProcess::Start({"--index", index_->dir(), "--match-engine", "gpu"});
  if (gpu.ok()) {
    GTEST_SKIP() << "this machine has a GPU matcher";
  }
  EXPECT_THAT(std::string(gpu.status().message()),
              HasSubstr("match engine gpu required but unavailable"));
}

TEST_F(SubscriptionE2eTest, CliVerbs) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  auto cli = [&](std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--server", server->address()});
    absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_CLI_BINARY, args, kE2eTimeout, input);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(ProcessResult{});
  };
  ProcessResult run =
      cli({"subscribe", "--interface", "alice", "terms contains \"t1 t2\" AND year >= 2001"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "1  terms contains \"t1\" AND terms contains \"t2\" AND year >= 2001\n");
  run = cli({"subscribe", "--interface", "legal", "label", "=", "\"spam\""});
  EXPECT_EQ(run.out, "2  label = \"spam\"\n");
  run = cli({"subscribe", "--interface", "legal", "label <"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tandem-cli: INVALID_ARGUMENT: predicate_text: "));
  run = cli({"subscribe", "year = 1"});
  EXPECT_EQ(run.exit_code, 2);

  run = cli({"subscriptions"});
  EXPECT_EQ(run.out,
            "1  alice  terms contains \"t1\" AND terms contains \"t2\" AND year >= 2001\n"
            "2  legal  label = \"spam\"\n");
  run = cli({"subscriptions", "--interface", "legal", "--json"});
  EXPECT_THAT(run.out, HasSubstr("\"predicate_text\":\"label = \\\"spam\\\"\""));

  // A watcher that stops after two documents, started before the match.
  ProcessResult watched;
  std::thread watcher([&] { watched = cli({"watch", "--interface", "legal", "--events", "2"}); });
  WaitForMetric(server->metrics_address(), "tandem_watch_streams", {}, Equals(1));
  const std::string documents =
      "{\"id\": \"m1\", \"text\": \"t1 t2\", \"attributes\": {\"year\": 2003}}\n"
      "{\"id\": \"m2\", \"attributes\": {\"label\": \"spam\", \"score\": 0.5}}\n"
      "\n"
      "{\"id\": \"m3\", \"text\": \"t1 t2\", \"attributes\": {\"year\": 2003.0, \"label\": "
      "\"spam\"}}\n";
  run = cli({"match"}, documents);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "m1: alice\nm2: legal\nm3: alice, legal\n");
  run = cli({"match", "--json"}, documents);
  EXPECT_THAT(run.out, HasSubstr("{\"document_id\":\"m3\",\"engine\":\"cpu\",\"interfaces\":["
                                 "\"alice\",\"legal\"]}"));
  watcher.join();
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
  EXPECT_EQ(watched.err, "tandem-cli: watching legal\n");
  EXPECT_EQ(watched.out, "m2  label=\"spam\" score=0.5\nm3  label=\"spam\" year=2003.0\n");

  run = cli({"match"}, "{\"id\": \"m1\", \"attributes\": {\"spam\": true}}\n");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("line 1: attribute \"spam\""));

  run = cli({"unsubscribe", "1"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "unsubscribed 1\n");
  run = cli({"unsubscribe", "1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tandem-cli: NOT_FOUND: "));
  run = cli({"unsubscribe", "one"});
  EXPECT_EQ(run.exit_code, 2);
  Stop(server);
}

}  // namespace
}  // namespace tandem::testing
