// The subscription service without gRPC: the conversions between the wire's messages and the match
// model, what each call does over a real registry (in memory, the brute-force matcher), the errors
// it names, and a Watch stream's bounded queue with its count of drops.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/analyzer.h"
#include "match/brute_force_matcher.h"
#include "match/predicate_parser.h"
#include "prometheus/registry.h"
#include "server/metrics_test_util.h"
#include "server/subscription_calls.h"
#include "server/subscription_convert.h"
#include "server/subscription_metrics.h"
#include "server/watch_hub.h"
#include "server/wire.h"

namespace tandem::server {
namespace {

using tandem::v1::Constraint;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::unique_ptr<index::Analyzer> EnglishAnalyzer() {
  auto analyzer = index::Analyzer::Create(index::AnalyzerConfig{});
  EXPECT_TRUE(analyzer.ok()) << analyzer.status();
  return analyzer.ok() ? *std::move(analyzer) : nullptr;
}

Constraint* AddConstraint(tandem::v1::Filter* filter, const std::string& name, Constraint::Op op) {
  Constraint* c = filter->add_constraints();
  c->set_name(name);
  c->set_op(op);
  return c;
}

tandem::v1::Attribute* AddAttribute(tandem::v1::Document* document, const std::string& name) {
  tandem::v1::Attribute* a = document->add_attributes();
  a->set_name(name);
  return a;
}

TEST(SubscriptionConvertTest, EveryOperatorAndValueKindRoundTrips) {
  const std::string text =
      "(a = 1 AND b != 2.5 AND c < -3 AND d > 4 AND e <= 5 AND f >= 6) OR (g prefix \"x\" AND h "
      "substring \"y\" AND i = \"z\") OR terms contains \"gas\"";
  absl::StatusOr<match::Predicate> parsed = match::ParsePredicate(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  tandem::v1::Predicate wire;
  PredicateToProto(*parsed, &wire);
  ASSERT_EQ(wire.filters_size(), 3);
  EXPECT_EQ(wire.filters(0).constraints(1).op(), Constraint::OP_NE);
  EXPECT_EQ(wire.filters(0).constraints(1).value().double_value(), 2.5);
  EXPECT_EQ(wire.filters(0).constraints(5).op(), Constraint::OP_GE);
  EXPECT_EQ(wire.filters(1).constraints(0).op(), Constraint::OP_PREFIX);
  EXPECT_EQ(wire.filters(1).constraints(1).op(), Constraint::OP_SUBSTRING);
  EXPECT_EQ(wire.filters(2).constraints(0).op(), Constraint::OP_CONTAINS);
  EXPECT_EQ(wire.filters(2).constraints(0).value().string_value(), "gas");
  absl::StatusOr<match::Predicate> back = PredicateFromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *parsed);
}

TEST(SubscriptionConvertTest, UnsetOperatorOrValueIsNamedByItsPlace) {
  tandem::v1::Predicate predicate;
  tandem::v1::Filter* filter = predicate.add_filters();
  AddConstraint(filter, "year", Constraint::OP_GE)->mutable_value()->set_int_value(2001);
  AddConstraint(filter, "domain", Constraint::OP_UNSPECIFIED)
      ->mutable_value()
      ->set_string_value("enron.com");
  absl::StatusOr<match::Predicate> converted = PredicateFromProto(predicate);
  EXPECT_EQ(converted.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(converted.status().message(),
            "filter 1, constraint 2 (domain): the operator is not set");

  filter->mutable_constraints(1)->set_op(Constraint::OP_EQ);
  filter->mutable_constraints(1)->clear_value();
  converted = PredicateFromProto(predicate);
  EXPECT_EQ(converted.status().message(), "filter 1, constraint 2 (domain): the value is not set");

  filter->mutable_constraints(1)->set_op(static_cast<Constraint::Op>(42));
  converted = PredicateFromProto(predicate);
  EXPECT_THAT(std::string(converted.status().message()), HasSubstr("unknown operator 42"));
}

TEST(SubscriptionConvertTest, DocumentsBecomeNormalizedEvents) {
  std::unique_ptr<index::Analyzer> analyzer = EnglishAnalyzer();
  tandem::v1::Document document;
  document.set_id("d1");
  AddAttribute(&document, "year")->mutable_value()->set_int_value(2001);
  AddAttribute(&document, "domain")->mutable_value()->set_string_value("enron.com");
  AddAttribute(&document, "score")->mutable_value()->set_double_value(0.5);
  document.set_text("Gas prices are rising");
  absl::StatusOr<match::Event> event = EventFromProto(document, *analyzer, match::Limits{});
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_EQ(event->attributes.size(), 3u);
  EXPECT_EQ(event->attributes[0].name, "domain");  // sorted by name
  EXPECT_EQ(event->attributes[1].value, match::Value::Double(0.5));
  EXPECT_EQ(event->attributes[2].value, match::Value::Int(2001));
  EXPECT_THAT(event->terms, ElementsAre("ga", "price", "rise"));  // stop words out, stemmed

  AddAttribute(&document, "label");  // no value
  event = EventFromProto(document, *analyzer, match::Limits{});
  EXPECT_EQ(event.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(event.status().message(), "attribute (label): the value is not set");

  document.mutable_attributes(3)->set_name("year");
  document.mutable_attributes(3)->mutable_value()->set_int_value(2);
  event = EventFromProto(document, *analyzer, match::Limits{});
  EXPECT_THAT(std::string(event.status().message()), HasSubstr("appears more than once"));

  match::Limits few;
  few.max_attributes_per_event = 2;
  event = EventFromProto(document, *analyzer, few);
  EXPECT_THAT(std::string(event.status().message()), HasSubstr("above the limit of 2"));
}

class SubscriptionCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    analyzer_ = EnglishAnalyzer();
    ASSERT_NE(analyzer_, nullptr);
    auto registry = match::SubscriptionRegistry::Open(
        options_, std::make_unique<match::BruteForceMatcher>(), nullptr);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = *std::move(registry);
    metrics_ = std::make_unique<SubscriptionMetrics>(prometheus_, std::vector<std::string>{"cpu"});
    hub_ = std::make_unique<WatchHub>(WatchHubOptions{.queue_capacity = 4}, metrics_.get());
    calls_ = std::make_unique<SubscriptionCalls>(*registry_, *analyzer_,
                                                 SubscriptionCallsOptions{.max_match_documents = 3},
                                                 hub_.get(), metrics_.get());
  }

  absl::StatusOr<tandem::v1::SubscribeResponse> SubscribeText(const std::string& interface,
                                                              const std::string& text) {
    tandem::v1::SubscribeRequest request;
    request.set_interface(interface);
    request.set_predicate_text(text);
    return calls_->Subscribe(request);
  }

  static tandem::v1::Document Mail(const std::string& id, int64_t year, const std::string& text) {
    tandem::v1::Document document;
    document.set_id(id);
    AddAttribute(&document, "year")->mutable_value()->set_int_value(year);
    document.set_text(text);
    return document;
  }

  match::RegistryOptions options_;
  std::unique_ptr<index::Analyzer> analyzer_;
  std::unique_ptr<match::SubscriptionRegistry> registry_;
  prometheus::Registry prometheus_;
  std::unique_ptr<SubscriptionMetrics> metrics_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<SubscriptionCalls> calls_;
};

TEST_F(SubscriptionCallsTest, SubscribeByTextOrMessagesListMatchAndUnsubscribe) {
  absl::StatusOr<tandem::v1::SubscribeResponse> alice =
      SubscribeText("alice", "terms contains \"Gas Prices\" AND year >= 2001");
  ASSERT_TRUE(alice.ok()) << alice.status();
  // Normalized: the text analyzed into one constraint per term.
  EXPECT_EQ(alice->predicate_text(),
            "terms contains \"ga\" AND terms contains \"price\" AND year >= 2001");

  tandem::v1::SubscribeRequest by_messages;
  by_messages.set_interface("legal");
  AddConstraint(by_messages.mutable_predicate()->add_filters(), "year", Constraint::OP_LT)
      ->mutable_value()
      ->set_int_value(2000);
  absl::StatusOr<tandem::v1::SubscribeResponse> legal = calls_->Subscribe(by_messages);
  ASSERT_TRUE(legal.ok()) << legal.status();
  EXPECT_EQ(legal->predicate_text(), "year < 2000");
  EXPECT_NE(legal->id(), alice->id());

  tandem::v1::ListSubscriptionsResponse all = *calls_->ListSubscriptions({});
  ASSERT_EQ(all.subscriptions_size(), 2);
  EXPECT_EQ(all.subscriptions(0).id(), alice->id());
  EXPECT_EQ(all.subscriptions(0).interface(), "alice");
  EXPECT_EQ(all.subscriptions(0).predicate_text(), alice->predicate_text());
  EXPECT_EQ(all.subscriptions(0).predicate().filters(0).constraints_size(), 3);
  tandem::v1::ListSubscriptionsRequest only_legal;
  only_legal.set_interface("legal");
  EXPECT_EQ(calls_->ListSubscriptions(only_legal)->subscriptions_size(), 1);
  only_legal.set_interface("nobody");
  EXPECT_EQ(calls_->ListSubscriptions(only_legal)->subscriptions_size(), 0);

  tandem::v1::MatchRequest match;
  *match.add_documents() = Mail("m1", 2002, "gas price hike");
  *match.add_documents() = Mail("m2", 1999, "gas prices");
  *match.add_documents() = Mail("m3", 2005, "nothing relevant");
  absl::StatusOr<tandem::v1::MatchResponse> matched = calls_->Match(match);
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_EQ(matched->engine(), "brute_force");
  ASSERT_EQ(matched->matches_size(), 3);
  EXPECT_EQ(matched->matches(0).document_id(), "m1");
  EXPECT_THAT(matched->matches(0).interfaces(), ElementsAre("alice"));
  EXPECT_THAT(matched->matches(1).interfaces(), ElementsAre("legal"));
  EXPECT_THAT(matched->matches(2).interfaces(), IsEmpty());

  tandem::v1::UnsubscribeRequest unsubscribe;
  unsubscribe.set_id(alice->id());
  EXPECT_TRUE(calls_->Unsubscribe(unsubscribe).ok());
  EXPECT_EQ(calls_->Unsubscribe(unsubscribe).status().code(), absl::StatusCode::kNotFound);
  matched = calls_->Match(match);
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_THAT(matched->matches(0).interfaces(), IsEmpty());

  metrics_testing::Scrape scrape(prometheus_);
  EXPECT_EQ(scrape.Value("tandem_subscriptions", {}), 1);
  EXPECT_EQ(
      scrape.Value("tandem_subscription_changes_total", {{"op", "subscribe"}, {"outcome", "OK"}}),
      2);
  EXPECT_EQ(scrape.Value("tandem_subscription_changes_total",
                         {{"op", "unsubscribe"}, {"outcome", "NOT_FOUND"}}),
            1);
  EXPECT_EQ(scrape.Value("tandem_match_documents_total", {{"engine", "brute_force"}}), 6);
}

TEST_F(SubscriptionCallsTest, PredicatesThatAreNotUtf8AreRefusedBeforeAnythingIsStored) {
  // The request is UTF-8; its escapes would not be. Stored, such a subscription made every
  // ListSubscriptions answer unreadable to every client.
  for (const char* text : {"s = \"\\xff\"", "`\\xc3` = 1", "s prefix \"a\\xe2\\x82\"",
                           "year = 1 OR terms contains \"gas \\xfe\""}) {
    absl::StatusOr<tandem::v1::SubscribeResponse> bad = SubscribeText("mallory", text);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("not valid UTF-8")) << text;
  }
  // The message form, with raw bytes the wire would never carry, is held to the same rule.
  tandem::v1::SubscribeRequest raw;
  raw.set_interface("mallory");
  AddConstraint(raw.mutable_predicate()->add_filters(), "s", Constraint::OP_EQ)
      ->mutable_value()
      ->set_string_value("\xff");
  EXPECT_EQ(calls_->Subscribe(raw).status().code(), absl::StatusCode::kInvalidArgument);
  // So is the interface name.
  absl::StatusOr<tandem::v1::SubscribeResponse> bad = SubscribeText("mall\xffory", "year = 1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("interface name is not valid UTF-8"));

  EXPECT_EQ(calls_->ListSubscriptions({})->subscriptions_size(), 0);
  // Escapes that spell whole characters are fine, and come back as the characters.
  absl::StatusOr<tandem::v1::SubscribeResponse> ok =
      SubscribeText("mallory", "`caf\\xc3\\xa9` = \"\\xe2\\x82\\xac\"");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->predicate_text(), "`caf\xc3\xa9` = \"\xe2\x82\xac\"");
  const tandem::v1::ListSubscriptionsResponse listed = *calls_->ListSubscriptions({});
  ASSERT_EQ(listed.subscriptions_size(), 1);
  EXPECT_TRUE(CheckUtf8Strings(listed).ok());
}

TEST_F(SubscriptionCallsTest, ABoundCallerActsOnlyForTheInterfacesItsCertificateNames) {
  const Caller alice{.bound = true, .identities = {"alice", "alice.example.com"}};
  const Caller bob{.bound = true, .identities = {"bob"}};
  const Caller nobody{.bound = true};
  tandem::v1::SubscribeRequest request;
  request.set_interface("alice");
  request.set_predicate_text("year = 1");
  // Bob may not subscribe, list, watch or unsubscribe for alice; a certificate without
  // identities acts for no interface.
  absl::StatusOr<tandem::v1::SubscribeResponse> refused = calls_->Subscribe(request, bob);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("interface \"alice\" is not one of this client certificate's identities "
                        "(bob)"));
  EXPECT_EQ(calls_->Subscribe(request, nobody).status().code(),
            absl::StatusCode::kPermissionDenied);
  absl::StatusOr<tandem::v1::SubscribeResponse> own = calls_->Subscribe(request, alice);
  ASSERT_TRUE(own.ok()) << own.status();
  request.set_interface("alice.example.com");
  ASSERT_TRUE(calls_->Subscribe(request, alice).ok());
  request.set_interface("bob");
  absl::StatusOr<tandem::v1::SubscribeResponse> bobs = calls_->Subscribe(request, bob);
  ASSERT_TRUE(bobs.ok()) << bobs.status();

  tandem::v1::ListSubscriptionsRequest list;
  list.set_interface("alice");
  EXPECT_EQ(calls_->ListSubscriptions(list, bob).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(calls_->ListSubscriptions(list, alice)->subscriptions_size(), 1);
  list.clear_interface();  // "all" is the caller's own
  EXPECT_EQ(calls_->ListSubscriptions(list, alice)->subscriptions_size(), 2);
  EXPECT_EQ(calls_->ListSubscriptions(list, bob)->subscriptions_size(), 1);
  EXPECT_EQ(calls_->ListSubscriptions(list, nobody)->subscriptions_size(), 0);
  EXPECT_EQ(calls_->ListSubscriptions(list)->subscriptions_size(), 3);  // unbound: everyone's

  EXPECT_EQ(calls_->AuthorizeWatch("alice", bob).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(calls_->AuthorizeWatch("alice", alice).ok());
  EXPECT_TRUE(calls_->AuthorizeWatch("alice", Caller{}).ok());

  tandem::v1::UnsubscribeRequest unsubscribe;
  unsubscribe.set_id(own->id());
  absl::StatusOr<tandem::v1::UnsubscribeResponse> gone = calls_->Unsubscribe(unsubscribe, bob);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(gone.status().message()), Not(HasSubstr("alice")));
  unsubscribe.set_id(9999);
  EXPECT_EQ(calls_->Unsubscribe(unsubscribe, bob).status().code(), absl::StatusCode::kNotFound);
  unsubscribe.set_id(own->id());
  EXPECT_TRUE(calls_->Unsubscribe(unsubscribe, alice).ok());
  unsubscribe.set_id(bobs->id());
  EXPECT_TRUE(calls_->Unsubscribe(unsubscribe).ok());  // unbound: anyone's
}

TEST_F(SubscriptionCallsTest, BadRequestsAreInvalidArgumentNamingTheProblem) {
  absl::StatusOr<tandem::v1::SubscribeResponse> bad = SubscribeText("alice", "year >= ");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("predicate_text: "));

  bad = SubscribeText("alice", "domain < \"enron.com\"");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("compares numbers"));

  bad = SubscribeText("alice", "terms contains \"the of\"");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("analyzes to no term"));

  bad = SubscribeText("", "year = 1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);

  tandem::v1::SubscribeRequest none;
  none.set_interface("alice");
  EXPECT_THAT(std::string(calls_->Subscribe(none).status().message()), HasSubstr("no predicate"));

  tandem::v1::MatchRequest match;
  for (int i = 0; i < 4; ++i) *match.add_documents() = Mail("m", 2000, "");
  absl::StatusOr<tandem::v1::MatchResponse> matched = calls_->Match(match);
  EXPECT_EQ(matched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(matched.status().message()),
              HasSubstr("4 documents, above the limit of 3"));

  match.mutable_documents()->DeleteSubrange(2, 2);
  match.mutable_documents(1)->set_id("second");
  AddAttribute(match.mutable_documents(1), "terms")->mutable_value()->set_int_value(1);
  matched = calls_->Match(match);
  EXPECT_EQ(matched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(matched.status().message()), HasSubstr("document 2 (id \"second\"): "));
  EXPECT_THAT(std::string(matched.status().message()), HasSubstr("reserved"));

  metrics_testing::Scrape scrape(prometheus_);
  EXPECT_EQ(scrape.Value("tandem_subscription_changes_total",
                         {{"op", "subscribe"}, {"outcome", "INVALID_ARGUMENT"}}),
            5);
}

TEST(WatchQueueTest, HoldsAtMostItsCapacityAndReportsDropsOnTheNextEvent) {
  auto event = [](const std::string& id) {
    tandem::v1::WatchEvent message;
    message.set_document_id(id);
    return std::make_shared<const std::string>(message.SerializeAsString());
  };
  auto decode = [](const std::optional<WatchQueue::Popped>& popped) {
    tandem::v1::WatchEvent message;
    EXPECT_TRUE(popped.has_value());
    if (popped) {
      EXPECT_TRUE(message.ParseFromString(popped->Bytes()));
    }
    return message;
  };
  WatchQueue queue(2);
  EXPECT_TRUE(queue.Push(event("a")));
  EXPECT_TRUE(queue.Push(event("b")));
  for (int i = 0; i < 300; ++i) EXPECT_FALSE(queue.Push(event("dropped")));
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.unreported_drops(), 300u);

  tandem::v1::WatchEvent first = decode(queue.Pop());
  EXPECT_EQ(first.document_id(), "a");
  EXPECT_EQ(first.dropped(), 300u);  // a varint of two bytes, appended
  tandem::v1::WatchEvent second = decode(queue.Pop());
  EXPECT_EQ(second.document_id(), "b");
  EXPECT_EQ(second.dropped(), 0u);
  EXPECT_FALSE(queue.Pop().has_value());

  EXPECT_TRUE(queue.Push(event("c")));
  EXPECT_EQ(decode(queue.Pop()).dropped(), 0u);
}

// The bytes a queue holds, and dropping its newest events for another stream's: counted as its
// drops, reported on the next event it sends.
TEST(WatchQueueTest, CountsItsBytesAndDropsItsNewestEventsToFreeThem) {
  auto event = [](const std::string& id, size_t pad) {
    tandem::v1::WatchEvent message;
    message.set_document_id(id + std::string(pad, '.'));
    return std::make_shared<const std::string>(message.SerializeAsString());
  };
  WatchQueue queue(10);
  EXPECT_EQ(queue.DropNewest(1000), std::make_pair(uint64_t{0}, uint64_t{0}));
  const EncodedEvent a = event("a", 1000), b = event("b", 2000), c = event("c", 3000);
  const uint64_t a_bytes = WatchQueue::EventBytes(*a), b_bytes = WatchQueue::EventBytes(*b),
                 c_bytes = WatchQueue::EventBytes(*c);
  EXPECT_GT(a_bytes, a->size());
  ASSERT_TRUE(queue.Push(a));
  ASSERT_TRUE(queue.Push(b));
  ASSERT_TRUE(queue.Push(c));
  EXPECT_EQ(queue.bytes(), a_bytes + b_bytes + c_bytes);
  // c alone frees enough for 3,000 bytes; 3,000 more take b too.
  EXPECT_EQ(queue.DropNewest(3000), std::make_pair(uint64_t{1}, c_bytes));
  EXPECT_EQ(queue.DropNewest(1), std::make_pair(uint64_t{1}, b_bytes));
  EXPECT_EQ(queue.bytes(), a_bytes);
  queue.CountDrop();
  EXPECT_EQ(queue.unreported_drops(), 3u);
  tandem::v1::WatchEvent first;
  ASSERT_TRUE(first.ParseFromString(queue.Pop()->Bytes()));
  EXPECT_EQ(first.document_id()[0], 'a');
  EXPECT_EQ(first.dropped(), 3u);
  EXPECT_EQ(queue.bytes(), 0u);
}

}  // namespace
}  // namespace tandem::server
