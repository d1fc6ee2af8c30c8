#include "match/model.h"

#include <cmath>
#include <limits>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/analyzer.h"
#include "match/brute_force_matcher.h"
#include "match/predicate_parser.h"
#include "match/satisfies.h"
#include "match/scenario.h"

namespace tandem::match {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<index::Analyzer> English() {
  return *index::Analyzer::Create(index::AnalyzerConfig{});
}

Predicate MustParse(absl::string_view text) {
  absl::StatusOr<Predicate> p = ParsePredicate(text);
  EXPECT_TRUE(p.ok()) << text << ": " << p.status();
  return p.ok() ? *p : Predicate{};
}

TEST(Satisfies, Numbers) {
  const Value three = Value::Int(3), three_d = Value::Double(3.0), half = Value::Double(2.5);
  EXPECT_TRUE(Satisfies(Op::kEq, three.ref(), three_d.ref()));
  EXPECT_TRUE(Satisfies(Op::kLt, three.ref(), half.ref()));  // 2.5 < 3
  EXPECT_FALSE(Satisfies(Op::kGt, three.ref(), half.ref()));
  EXPECT_TRUE(Satisfies(Op::kGe, three_d.ref(), three.ref()));
  EXPECT_TRUE(Satisfies(Op::kNe, three.ref(), half.ref()));
  // int64 against int64 is exact beyond 2^53; against a double it compares as doubles.
  const Value big = Value::Int((int64_t{1} << 53) + 1), big_minus = Value::Int(int64_t{1} << 53);
  EXPECT_TRUE(Satisfies(Op::kGt, big_minus.ref(), big.ref()));
  const Value big_d = Value::Double(static_cast<double>(int64_t{1} << 53));
  EXPECT_TRUE(Satisfies(Op::kEq, big_d.ref(), big.ref()));
  const Value neg = Value::Int(-7);
  EXPECT_TRUE(Satisfies(Op::kLt, Value::Int(0).ref(), neg.ref()));
}

TEST(Satisfies, StringsAndMismatches) {
  const Value enron = Value::String("enron.com");
  EXPECT_TRUE(Satisfies(Op::kPrefix, Value::String("enr").ref(), enron.ref()));
  EXPECT_TRUE(Satisfies(Op::kPrefix, Value::String("").ref(), enron.ref()));
  EXPECT_FALSE(Satisfies(Op::kPrefix, Value::String("enron.com.au").ref(), enron.ref()));
  EXPECT_TRUE(Satisfies(Op::kSubstring, Value::String("n.c").ref(), enron.ref()));
  EXPECT_TRUE(Satisfies(Op::kSubstring, Value::String("").ref(), enron.ref()));
  EXPECT_FALSE(Satisfies(Op::kSubstring, Value::String("com.").ref(), enron.ref()));
  EXPECT_TRUE(Satisfies(Op::kNe, Value::String("enron").ref(), enron.ref()));
  EXPECT_FALSE(Satisfies(Op::kNe, Value::String("enron.com").ref(), enron.ref()));
  // A number never satisfies a string constraint, != included, and the other way round.
  EXPECT_FALSE(Satisfies(Op::kNe, Value::String("3").ref(), Value::Int(3).ref()));
  EXPECT_FALSE(Satisfies(Op::kNe, Value::Int(3).ref(), Value::String("x").ref()));
  EXPECT_FALSE(Satisfies(Op::kContains, Value::String("x").ref(), Value::String("x").ref()));
}

TEST(ParsePredicate, Grammar) {
  const Predicate p = MustParse(
      "(sender = \"enron.com\" AND year >= 2001) or terms CONTAINS \"gas\" OR score < -1.5e2 AND "
      "`odd name` != \"a\\\"b\\x01\"");
  ASSERT_EQ(p.filters.size(), 3u);
  EXPECT_EQ(p.filters[0].constraints[0],
            (Constraint{"sender", Op::kEq, Value::String("enron.com")}));
  EXPECT_EQ(p.filters[0].constraints[1], (Constraint{"year", Op::kGe, Value::Int(2001)}));
  EXPECT_EQ(p.filters[1].constraints[0],
            (Constraint{"terms", Op::kContains, Value::String("gas")}));
  EXPECT_EQ(p.filters[2].constraints[0], (Constraint{"score", Op::kLt, Value::Double(-150)}));
  EXPECT_EQ(p.filters[2].constraints[1],
            (Constraint{"odd name", Op::kNe, Value::String(std::string("a\"b\x01", 4))}));
  // Every one-letter escape.
  EXPECT_EQ(MustParse("a = \"\\n\\t\\r\\\\\\\"\\`\"").filters[0].constraints[0].value,
            Value::String("\n\t\r\\\"`"));
  EXPECT_EQ(
      MustParse("a==1 and (b prefix \"x\" AND (c substring \"y\"))").filters[0].constraints.size(),
      3u);
}

TEST(ParsePredicate, Errors) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"", "empty predicate"},
      {"   ", "empty predicate"},
      {"a ~ 1", "unknown operator '~'"},
      {"a like \"x\"", "unknown operator 'like'"},
      {"a =", "expected a value"},
      {"a = foo", "strings take double quotes"},
      {"a = \"open", "unterminated string"},
      {"a = \"bad \\q\"", "unknown escape"},
      {"a = \"\\x4\"", "two hex digits"},
      {"a = 99999999999999999999", "out of the 64-bit range"},
      {"a = 1e999", "bad number"},
      {"(a = 1 OR b = 2)", "OR inside parentheses"},
      {"(a = 1", "expected ')'"},
      {"a = 1)", "unbalanced ')'"},
      {"a = 1 b = 2", "expected AND, OR or the end"},
      {"a = 1 AND", "expected an attribute name"},
      {"= 1", "expected an attribute name"},
      {"a = 1.2.3", "bad number"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Predicate> p = ParsePredicate(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(ParsePredicate, RefusesEscapesThatAreNotUtf8) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"s = \"\\xff\"", "the string is not valid UTF-8"},
      {"s = \"ok\\xc3\"", "the string is not valid UTF-8"},               // a sequence cut short
      {"s = \"\\xc0\\xaf\"", "the string is not valid UTF-8"},            // overlong '/'
      {"s = \"\\xed\\xa0\\x80\"", "the string is not valid UTF-8"},       // a surrogate
      {"s = \"\\xf4\\x90\\x80\\x80\"", "the string is not valid UTF-8"},  // past U+10FFFF
      {"`\\xfe` = 1", "the name is not valid UTF-8"},
      {"a = 1 AND `x\\x80y` prefix \"z\"", "at byte 10: the name"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Predicate> p = ParsePredicate(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.text;
  }
  // Escapes that spell whole sequences are the characters themselves.
  EXPECT_EQ(MustParse("`caf\\xc3\\xa9` = \"\\xe2\\x82\\xac\"").filters[0].constraints[0],
            (Constraint{"caf\xc3\xa9", Op::kEq, Value::String("\xe2\x82\xac")}));
}

TEST(NormalizePredicate, RefusesNamesAndStringsThatAreNotUtf8) {
  // The message form reaches NormalizePredicate without the parser: it checks on its own.
  auto analyzer = English();
  Predicate bad_value;
  bad_value.filters.push_back(Filter{{Constraint{"s", Op::kEq, Value::String("a\xff")}}});
  absl::StatusOr<Predicate> r = NormalizePredicate(bad_value, analyzer.get(), Limits{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("filter 1, constraint 1 (s =): the string value is not valid UTF-8 "
                        "(byte 2: 0xff)"));
  Predicate bad_name;
  bad_name.filters.push_back(Filter{
      {Constraint{"ok", Op::kEq, Value::Int(1)}, Constraint{"n\xc3", Op::kLt, Value::Int(1)}}});
  r = NormalizePredicate(bad_name, analyzer.get(), Limits{});
  ASSERT_FALSE(r.ok());
  // The name in the message is escaped, so the message is UTF-8 too.
  EXPECT_THAT(r.status().message(),
              HasSubstr("constraint 2 (`n\\xc3` <): the attribute name is not valid UTF-8"));
  Predicate bad_terms;
  bad_terms.filters.push_back(
      Filter{{Constraint{"terms", Op::kContains, Value::String("gas \xfe")}}});
  EXPECT_EQ(NormalizePredicate(bad_terms, analyzer.get(), Limits{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Events are held to the same rule: their attributes are answered to Watch streams.
  EXPECT_THAT(
      MakeEvent({Attribute{"x", Value::String("\x80")}}, "", nullptr, Limits{}).status().message(),
      HasSubstr("not valid UTF-8"));
}

TEST(FormatPredicate, EscapesBytesOutsideUtf8AndStaysUtf8) {
  EXPECT_EQ(FormatValue(Value::String("caf\xc3\xa9 \xff\xc3")), "\"caf\xc3\xa9 \\xff\\xc3\"");
  Predicate p;
  p.filters.push_back(Filter{{Constraint{"\xe2\x82", Op::kEq, Value::String("\xed\xa0\x80")}}});
  const std::string text = FormatPredicate(p);
  EXPECT_EQ(text, "`\\xe2\\x82` = \"\\xed\\xa0\\x80\"");
}

TEST(ParsePredicate, FormatRoundTrips) {
  Scenario sc;
  sc.interfaces = 2;
  sc.filters_min = sc.filters_max = 40;
  sc.filters_per_subscription = 5;
  sc.vocabulary = 50;
  sc.term_share = 0.2;
  for (const GeneratedSubscription& g : GenerateSubscriptions(sc, 7)) {
    const std::string text = FormatPredicate(g.predicate);
    absl::StatusOr<Predicate> back = ParsePredicate(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(*back, g.predicate) << text;
  }
  Predicate odd;
  odd.filters.push_back(
      Filter{{Constraint{"and", Op::kEq, Value::Double(1)},
              Constraint{"x y", Op::kNe, Value::String("q\"\\\n\t\x7f")},
              Constraint{"n", Op::kGt, Value::Double(0.1)},
              Constraint{"m", Op::kLe, Value::Int(std::numeric_limits<int64_t>::min())}}});
  EXPECT_EQ(*ParsePredicate(FormatPredicate(odd)), odd) << FormatPredicate(odd);
}

TEST(NormalizePredicate, AnalyzesTermsAndChecksTypes) {
  auto analyzer = English();
  Limits limits;
  absl::StatusOr<Predicate> p = NormalizePredicate(
      MustParse("terms contains \"The Gas Prices\" AND terms contains \"price\" AND year > 2000"),
      analyzer.get(), limits);
  ASSERT_TRUE(p.ok()) << p.status();
  // "the" is a stop word; "prices" and "price" stem alike and are kept once.
  EXPECT_EQ(FormatPredicate(*p),
            "terms contains \"ga\" AND terms contains \"price\" AND year > 2000");

  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"terms = \"gas\"", "`terms` takes only contains"},
      {"body contains \"gas\"", "contains applies only to `terms`"},
      {"terms contains 3", "contains takes a string"},
      {"terms contains \"the of\"", "analyzes to no term"},
      {"name < \"b\"", "compares numbers"},
      {"year prefix 19", "prefix takes a string"},
      {"year substring 1.5", "substring takes a string"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Predicate> r = NormalizePredicate(MustParse(c.text), analyzer.get(), limits);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr("filter 1, constraint 1")) << c.text;
  }
}

TEST(NormalizePredicate, Limits) {
  Limits limits;
  limits.max_filters_per_predicate = 2;
  limits.max_constraints_per_filter = 3;
  limits.max_value_bytes = 8;
  auto analyzer = English();
  auto fails = [&](const std::string& text, const char* message) {
    absl::StatusOr<Predicate> r = NormalizePredicate(MustParse(text), analyzer.get(), limits);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.status().message(), HasSubstr(message)) << text;
  };
  fails("a = 1 OR b = 2 OR c = 3", "3 filters, above the limit of 2");
  fails("a = 1 AND b = 2 AND c = 3 AND d = 4", "4 constraints");
  fails("terms contains \"b c d e\"", "(after analysis)");
  fails("a = \"123456789\"", "9 bytes, above the limit of 8");
  fails("abcdefghi = 1", "attribute name of 9 bytes");
  EXPECT_FALSE(NormalizePredicate(Predicate{}, analyzer.get(), limits).ok());
  EXPECT_FALSE(NormalizePredicate(Predicate{{Filter{}}}, analyzer.get(), limits).ok());
  Predicate nan;
  nan.filters.push_back(Filter{{Constraint{"x", Op::kLt, Value::Double(NAN)}}});
  absl::StatusOr<Predicate> r = NormalizePredicate(nan, analyzer.get(), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("finite"));
  Limits bad;
  bad.max_constraints_per_filter = 256;
  EXPECT_FALSE(NormalizePredicate(MustParse("a = 1"), nullptr, bad).ok());
}

TEST(MakeEvent, ChecksAndSorts) {
  auto analyzer = English();
  Limits limits;
  absl::StatusOr<Event> e = MakeEvent(
      {Attribute{"year", Value::Int(2001)}, Attribute{"domain", Value::String("enron.com")}},
      "Gas prices rose; the gas is pricey", analyzer.get(), limits);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->attributes[0].name, "domain");
  EXPECT_THAT(e->terms, ::testing::ElementsAre("ga", "price", "pricei", "rose"));
  EXPECT_THAT(
      MakeEvent({Attribute{"a", Value::Int(1)}, Attribute{"a", Value::Int(2)}}, "", nullptr, limits)
          .status()
          .message(),
      HasSubstr("appears more than once"));
  EXPECT_THAT(
      MakeEvent({Attribute{"terms", Value::String("x")}}, "", nullptr, limits).status().message(),
      HasSubstr("reserved"));
  EXPECT_THAT(MakeEvent({Attribute{"", Value::Int(1)}}, "", nullptr, limits).status().message(),
              HasSubstr("empty attribute name"));
  EXPECT_THAT(
      MakeEvent({Attribute{"x", Value::Double(INFINITY)}}, "", nullptr, limits).status().message(),
      HasSubstr("finite"));
  limits.max_attributes_per_event = 1;
  EXPECT_THAT(
      MakeEvent({Attribute{"a", Value::Int(1)}, Attribute{"b", Value::Int(1)}}, "", nullptr, limits)
          .status()
          .message(),
      HasSubstr("2 attributes"));
  limits.max_terms_per_event = 2;
  EXPECT_THAT(MakeEvent({}, "one two three", analyzer.get(), limits).status().message(),
              HasSubstr("3 distinct terms"));
}

TEST(PredicateMatches, Semantics) {
  auto analyzer = English();
  const Limits limits;
  const Event e = *MakeEvent(
      {Attribute{"year", Value::Int(2001)}, Attribute{"domain", Value::String("enron.com")}},
      "gas prices", analyzer.get(), limits);
  auto matches = [&](const char* text) {
    return PredicateMatches(*NormalizePredicate(MustParse(text), analyzer.get(), limits), e);
  };
  EXPECT_TRUE(matches("year = 2001 AND terms contains \"gas price\""));
  EXPECT_TRUE(matches("year = 2001.0"));
  EXPECT_FALSE(matches("year = 2001 AND terms contains \"oil\""));
  EXPECT_TRUE(matches("year = 1999 OR domain substring \"ron\""));
  EXPECT_FALSE(matches("missing != 3"));  // an absent attribute satisfies nothing
  EXPECT_FALSE(matches("domain != 3"));   // nor does a type mismatch
  EXPECT_TRUE(matches("domain prefix \"\""));
}

TEST(BruteForceMatcher, AddRemoveAndIds) {
  BruteForceMatcher m;
  const Predicate p = MustParse("a = 1");
  ASSERT_TRUE(m.Add(1, 0, p).ok());
  EXPECT_EQ(m.Add(1, 0, p).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(m.Add(2, 3, p).ok());
  std::vector<Event> events(2);
  events[0].attributes.push_back(Attribute{"a", Value::Int(1)});
  std::vector<std::vector<InterfaceId>> out;
  ASSERT_TRUE(m.Match(events, &out).ok());
  EXPECT_THAT(out[0], ::testing::ElementsAre(0, 3));
  EXPECT_TRUE(out[1].empty());
  ASSERT_TRUE(m.Remove(1).ok());
  EXPECT_EQ(m.Remove(1).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(m.Match(events, &out).ok());
  EXPECT_THAT(out[0], ::testing::ElementsAre(3));
  EXPECT_EQ(m.stats().constraints, 1u);
}

TEST(Scenario, MatchesHappenAndTypesAgree) {
  Scenario sc;
  sc.interfaces = 5;
  sc.filters_min = sc.filters_max = 400;
  sc.names = 20;
  sc.constraints_min = 2;
  sc.constraints_max = 4;
  BruteForceMatcher m;
  SubscriptionId id = 1;
  for (const GeneratedSubscription& g : GenerateSubscriptions(sc, 3)) {
    ASSERT_TRUE(NormalizePredicate(g.predicate, nullptr, Limits{}).ok());
    ASSERT_TRUE(m.Add(id++, g.interface, g.predicate).ok());
  }
  const std::vector<Event> events = GenerateEvents(sc, 50, 4);
  std::vector<std::vector<InterfaceId>> out;
  ASSERT_TRUE(m.Match(events, &out).ok());
  size_t matched = 0;
  for (const auto& o : out) matched += o.size();
  EXPECT_GT(matched, 0u);
  EXPECT_LT(matched, 50u * 5u);
}

}  // namespace
}  // namespace tandem::match
