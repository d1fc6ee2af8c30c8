// Tests of filters: the text form (every operator, precedence, quoting, keywords in any case, the
// printer read back to the same tree, every error with its offset, the limits), and evaluation on
// random attribute indexes (keyword and integer fields, exact and multi-value buckets, documents
// with no value or several) against a brute-force evaluation of each document's values, for random
// filter trees in both bitmap codecs; and every error of binding a filter to an index.
#include "filter/filter.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/enum_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::filter {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Kind = FilterNode::Kind;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

FilterNode Parsed(std::string_view text) {
  absl::StatusOr<FilterNode> node = ParseFilter(text);
  EXPECT_TRUE(node.ok()) << text << ": " << node.status();
  return node.ok() ? *node : FilterNode();
}

// The parse error of `text`, which must be INVALID_ARGUMENT.
std::string ParseError(std::string_view text) {
  absl::StatusOr<FilterNode> node = ParseFilter(text);
  EXPECT_FALSE(node.ok()) << text << " parsed as " << FilterToText(*node);
  if (node.ok()) return "";
  EXPECT_TRUE(absl::IsInvalidArgument(node.status())) << node.status();
  return std::string(node.status().message());
}

FilterNode T(std::string field, std::string value) { return FilterNode::Term(field, value); }
FilterNode And(std::vector<FilterNode> c) { return FilterNode::And(std::move(c)); }
FilterNode Or(std::vector<FilterNode> c) { return FilterNode::Or(std::move(c)); }
FilterNode Not(FilterNode c) { return FilterNode::Not(std::move(c)); }

// ---------------------------------------------------------------------------------------------
// The text form.

TEST(ParseFilter, EveryOperator) {
  EXPECT_EQ(Parsed("year = 2002"), T("year", "2002"));
  EXPECT_EQ(Parsed("domain:example.com"), T("domain", "example.com"));
  EXPECT_EQ(Parsed("year=2002"), T("year", "2002"));
  EXPECT_EQ(Parsed("year != 2002"), Not(T("year", "2002")));
  EXPECT_EQ(Parsed("topic IN (a, b, \"c d\")"), FilterNode::In("topic", {"a", "b", "c d"}));
  EXPECT_EQ(Parsed("topic IN(a)"), FilterNode::In("topic", {"a"}));
  EXPECT_EQ(Parsed("year >= 2002"), FilterNode::Range("year", 2002, std::nullopt));
  EXPECT_EQ(Parsed("year > 2001"), FilterNode::Range("year", 2002, std::nullopt));
  EXPECT_EQ(Parsed("year <= 2004"), FilterNode::Range("year", std::nullopt, 2004));
  EXPECT_EQ(Parsed("year < 2005"), FilterNode::Range("year", std::nullopt, 2004));
  EXPECT_EQ(Parsed("year>-3"), FilterNode::Range("year", -2, std::nullopt));
  EXPECT_EQ(Parsed("year >= \"2002\""), FilterNode::Range("year", 2002, std::nullopt));
  EXPECT_EQ(Parsed("year = 2000..2004"), FilterNode::Range("year", 2000, 2004));
  EXPECT_EQ(Parsed("year:2000..2004"), FilterNode::Range("year", 2000, 2004));
  EXPECT_EQ(Parsed("year = 2000.."), FilterNode::Range("year", 2000, std::nullopt));
  EXPECT_EQ(Parsed("year = ..2004"), FilterNode::Range("year", std::nullopt, 2004));
  EXPECT_EQ(Parsed("year = .."), FilterNode::Range("year", std::nullopt, std::nullopt));
  EXPECT_EQ(Parsed("t = -5..-1"), FilterNode::Range("t", -5, -1));
  EXPECT_EQ(Parsed("t = 3..3"), FilterNode::Range("t", 3, 3));
  EXPECT_EQ(Parsed("year != 2000..2004"), Not(FilterNode::Range("year", 2000, 2004)));
  EXPECT_EQ(Parsed("t >= -9223372036854775808"), FilterNode::Range("t", kMin, std::nullopt));
  EXPECT_EQ(Parsed("t <= 9223372036854775807"), FilterNode::Range("t", std::nullopt, kMax));
  EXPECT_EQ(Parsed("t > -9223372036854775808"), FilterNode::Range("t", kMin + 1, std::nullopt));
  // A quoted value holding ".." is a term.
  EXPECT_EQ(Parsed("path = \"a..b\""), T("path", "a..b"));
}

TEST(ParseFilter, Precedence) {
  const FilterNode a = T("a", "1"), b = T("b", "2"), c = T("c", "3");
  EXPECT_EQ(Parsed("a=1 OR b=2 AND c=3"), Or({a, And({b, c})}));
  EXPECT_EQ(Parsed("a=1 AND b=2 OR c=3"), Or({And({a, b}), c}));
  EXPECT_EQ(Parsed("(a=1 OR b=2) AND c=3"), And({Or({a, b}), c}));
  EXPECT_EQ(Parsed("a=1 AND b=2 AND c=3"), And({a, b, c}));
  EXPECT_EQ(Parsed("a=1 OR b=2 OR c=3"), Or({a, b, c}));
  EXPECT_EQ(Parsed("a=1 OR (b=2 OR c=3)"), Or({a, Or({b, c})}));
  EXPECT_EQ(Parsed("NOT a=1 AND b=2"), And({Not(a), b}));
  EXPECT_EQ(Parsed("NOT (a=1 AND b=2)"), Not(And({a, b})));
  EXPECT_EQ(Parsed("NOT NOT a=1"), Not(Not(a)));
  EXPECT_EQ(Parsed("((a=1))"), a);
  EXPECT_EQ(Parsed(" \t\n( a = 1 )\r\n"), a);
}

TEST(ParseFilter, KeywordsInAnyCase) {
  const FilterNode expected =
      Or({And({T("a", "1"), T("b", "2")}), Not(FilterNode::In("c", {"x"}))});
  EXPECT_EQ(Parsed("a=1 and b=2 or not c in (x)"), expected);
  EXPECT_EQ(Parsed("a=1 AnD b=2 oR NoT c In (x)"), expected);
}

TEST(ParseFilter, ValuesAndQuoting) {
  EXPECT_EQ(Parsed("from = bob@example.com"), T("from", "bob@example.com"));
  EXPECT_EQ(Parsed("path = a/b+c_d-e.f"), T("path", "a/b+c_d-e.f"));
  EXPECT_EQ(Parsed("city = Z\xC3\xBCrich"), T("city", "Z\xC3\xBCrich"));
  EXPECT_EQ(Parsed("t = \"x \\\"y\\\" \\\\ z\""), T("t", "x \"y\" \\ z"));
  EXPECT_EQ(Parsed("t = \"\""), T("t", ""));
  EXPECT_EQ(Parsed("t = \"a\nb(c)\""), T("t", "a\nb(c)"));
  EXPECT_EQ(Parsed("t = AND"), T("t", "AND"));  // a value, wherever a value stands
  EXPECT_EQ(Parsed("field.sub-name_2 = 1"), T("field.sub-name_2", "1"));
}

TEST(ParseFilter, KeywordsAsFieldNames) {
  EXPECT_EQ(Parsed("not = 1"), T("not", "1"));
  EXPECT_EQ(Parsed("not:1"), T("not", "1"));
  EXPECT_EQ(Parsed("not != 1"), Not(T("not", "1")));
  EXPECT_EQ(Parsed("NOT not = 1"), Not(T("not", "1")));
  EXPECT_EQ(Parsed("not IN (a)"), FilterNode::In("not", {"a"}));
  EXPECT_EQ(Parsed("NOT in = 1"), Not(T("in", "1")));
  EXPECT_EQ(Parsed("NOT in IN (a)"), Not(FilterNode::In("in", {"a"})));
  EXPECT_EQ(Parsed("and = 1 AND or = 2"), And({T("and", "1"), T("or", "2")}));
  EXPECT_EQ(Parsed("NOT(a = 1)"), Not(T("a", "1")));
}

TEST(FilterToText, Forms) {
  EXPECT_EQ(FilterToText(Parsed("year>=2002 AND domain:example.com")),
            "year >= 2002 AND domain = example.com");
  EXPECT_EQ(FilterToText(Parsed("a != 1")), "a != 1");
  EXPECT_EQ(FilterToText(Parsed("NOT (a=1 AND b=2) OR c<3")), "NOT (a = 1 AND b = 2) OR c <= 2");
  EXPECT_EQ(FilterToText(Parsed("(a=1 OR b=2) AND (c=3 OR d = 4)")),
            "(a = 1 OR b = 2) AND (c = 3 OR d = 4)");
  EXPECT_EQ(FilterToText(Parsed("x in (\"a b\", c, \"or\", \"1..2\", \"\")")),
            "x IN (\"a b\", c, \"or\", \"1..2\", \"\")");
  EXPECT_EQ(FilterToText(FilterNode::Range("y", 1, 1)), "y = 1..1");
  EXPECT_EQ(FilterToText(FilterNode::Range("y", std::nullopt, std::nullopt)), "y = ..");
  // A chain of one child is the child.
  EXPECT_EQ(FilterToText(And({Or({T("a", "1")})})), "a = 1");
  EXPECT_EQ(FilterToText(Not(And({Or({T("a", "1"), T("b", "2")})}))), "NOT (a = 1 OR b = 2)");
}

// Random trees of awkward fields and values read back as themselves.
std::string RandomValue(std::mt19937_64& rng) {
  static const std::vector<std::string> kValues = {
      "a",  "2002", "-7",   "",          "a b",      "x\"y",        "back\\slash",
      "or", "NOT",  "1..2", "..",        ".",        "caf\xC3\xA9", "a@b/c+d",
      "(",  ")",    ",",    "tab\there", "\xFF\xFE", "AND1"};
  return kValues[rng() % kValues.size()];
}

FilterNode RandomTextTree(std::mt19937_64& rng, int depth) {
  static const std::vector<std::string> kFields = {"a",  "year",    "not", "in", "and",
                                                   "or", "x.y-z_1", "NOT", "In", "9"};
  const std::string field = kFields[rng() % kFields.size()];
  const int choice = depth == 0 ? int(rng() % 3) : int(rng() % 6);
  switch (choice) {
    case 0:
      return T(field, RandomValue(rng));
    case 1: {
      std::vector<std::string> values(1 + rng() % 4);
      for (std::string& v : values) v = RandomValue(rng);
      return FilterNode::In(field, values);
    }
    case 2: {
      const int64_t bounds[] = {kMin, kMin + 1, -1, 0, 5, 2002, kMax - 1, kMax};
      std::optional<int64_t> lo, hi;
      if (rng() % 3 != 0) lo = bounds[rng() % 8];
      if (rng() % 3 != 0) hi = bounds[rng() % 8];
      if (lo && hi && *lo > *hi) std::swap(lo, hi);
      return FilterNode::Range(field, lo, hi);
    }
    case 3:
      return Not(RandomTextTree(rng, depth - 1));
    default: {
      std::vector<FilterNode> children(2 + rng() % 3);
      for (FilterNode& c : children) c = RandomTextTree(rng, depth - 1);
      return choice == 4 ? And(std::move(children)) : Or(std::move(children));
    }
  }
}

TEST(FilterToText, RoundTripOfRandomTrees) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    const FilterNode tree = RandomTextTree(rng, int(rng() % 6));
    ASSERT_TRUE(ValidateFilter(tree).ok()) << ValidateFilter(tree);
    const std::string text = FilterToText(tree);
    absl::StatusOr<FilterNode> back = ParseFilter(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    ASSERT_EQ(*back, tree) << text << " read back as " << FilterToText(*back);
  }
}

TEST(ParseFilter, ErrorsNameTheOffsetAndWhatWasExpected) {
  EXPECT_THAT(ParseError(""), HasSubstr("offset 0: expected a filter, found the end"));
  EXPECT_THAT(ParseError("   "), HasSubstr("offset 3: expected a filter"));
  EXPECT_THAT(ParseError("year"), HasSubstr("offset 4: expected an operator"));
  EXPECT_THAT(ParseError("a ~ 1"),
              AllOf(HasSubstr("offset 2: expected an operator"), HasSubstr("found '~'")));
  EXPECT_THAT(ParseError("a@b = 1"), HasSubstr("offset 1: expected an operator"));
  EXPECT_THAT(ParseError("year >= abc"),
              AllOf(HasSubstr("offset 8: expected an integer after '>='"), HasSubstr("\"abc\"")));
  EXPECT_THAT(ParseError("year >= 9223372036854775808"),
              HasSubstr("offset 8: expected an integer after '>='"));
  EXPECT_THAT(ParseError("year < 1.5"), HasSubstr("offset 7: expected an integer after '<'"));
  EXPECT_THAT(ParseError("year > 9223372036854775807"),
              HasSubstr("offset 7: no integer is greater than 9223372036854775807"));
  EXPECT_THAT(ParseError("year < -9223372036854775808"),
              HasSubstr("offset 7: no integer is less than -9223372036854775808"));
  EXPECT_THAT(ParseError("year = "), HasSubstr("offset 7: expected a value after '='"));
  EXPECT_THAT(ParseError("year != )"), HasSubstr("offset 8: expected a value after '!='"));
  EXPECT_THAT(ParseError("a = \"abc"),
              HasSubstr("offset 8: expected '\"' to close the string at offset 4"));
  EXPECT_THAT(ParseError("a = \"a\\nb\""),
              HasSubstr("offset 7: expected '\"' or '\\' after a backslash"));
  EXPECT_THAT(ParseError("a = \"a\\"), HasSubstr("offset 7: expected '\"' or '\\'"));
  EXPECT_THAT(ParseError("(a = 1"), HasSubstr("offset 6: expected AND, OR or ')' to close the "
                                              "'(' at offset 0"));
  EXPECT_THAT(ParseError("a = 1)"), HasSubstr("offset 5: expected AND, OR or the end (this ')' "
                                              "closes nothing)"));
  EXPECT_THAT(ParseError("a = 1 b = 2"),
              AllOf(HasSubstr("offset 6: expected AND, OR or the end"), HasSubstr("\"b\"")));
  EXPECT_THAT(ParseError("a = 1 ANDb = 2"), HasSubstr("offset 6: expected AND, OR or the end"));
  EXPECT_THAT(ParseError("a = 1 AND"),
              HasSubstr("offset 9: expected a field name, '(' or NOT, found the end"));
  EXPECT_THAT(ParseError("AND a = 1"), HasSubstr("offset 0: expected a field name, '(' or NOT"));
  EXPECT_THAT(ParseError("a = 1 OR OR b = 2"),
              HasSubstr("offset 9: expected a field name, '(' or NOT, found \"OR\""));
  EXPECT_THAT(ParseError("NOT"), HasSubstr("offset 3: expected a field name, '(' or NOT"));
  EXPECT_THAT(ParseError("()"), HasSubstr("offset 1: expected a field name"));
  EXPECT_THAT(ParseError("a IN a"), HasSubstr("offset 5: expected '(' after IN"));
  EXPECT_THAT(ParseError("a IN ()"), HasSubstr("offset 6: expected a value after 'IN ('"));
  EXPECT_THAT(ParseError("a IN (1, )"), HasSubstr("offset 9: expected a value"));
  EXPECT_THAT(ParseError("a IN (1 2)"), HasSubstr("offset 8: expected ',' or ')' in the IN list"));
  EXPECT_THAT(ParseError("a IN (1"), HasSubstr("offset 7: expected ',' or ')'"));
  EXPECT_THAT(ParseError("a IN (1..2)"), HasSubstr("offset 6: a range (lo..hi) inside IN"));
  EXPECT_THAT(ParseError("a = 1..x"), HasSubstr("offset 7: expected an integer range lo..hi"));
  EXPECT_THAT(ParseError("a = x..1"), HasSubstr("offset 4: expected an integer range lo..hi"));
  EXPECT_THAT(ParseError("a = 1..2..3"), HasSubstr("offset 7: expected an integer range"));
  EXPECT_THAT(ParseError("a = 5..3"),
              HasSubstr("offset 4: the range 5..3 has its lower bound above its upper bound"));
  EXPECT_THAT(ParseError("a = \xFF\x01"), HasSubstr("offset 5: expected AND, OR or the end"));
}

TEST(ParseFilter, Limits) {
  // Text.
  const std::string at_limit = "t = \"" + std::string(kMaxFilterTextBytes - 6, 'x') + "\"";
  ASSERT_EQ(at_limit.size(), kMaxFilterTextBytes);
  EXPECT_TRUE(ParseFilter(at_limit).ok());
  EXPECT_THAT(ParseError(at_limit + " "), HasSubstr("filter text of 65537 bytes; at most 65536"));

  // Depth: 63 NOTs above a term are 64 levels; 64 are too many, reported at the outermost.
  std::string nots;
  for (int i = 0; i < 63; ++i) nots += "NOT ";
  EXPECT_TRUE(ParseFilter(nots + "a = 1").ok());
  EXPECT_THAT(ParseError("NOT " + nots + "a = 1"),
              HasSubstr("offset 0: nested deeper than 64 levels"));
  // Parentheses: 64 around a term are read; the 65th is refused before the parser descends, and
  // so are 30,000, without a deep recursion.
  EXPECT_TRUE(ParseFilter(std::string(64, '(') + "a = 1" + std::string(64, ')')).ok());
  EXPECT_THAT(ParseError(std::string(65, '(') + "a = 1" + std::string(65, ')')),
              HasSubstr("offset 64: nested deeper than 64 levels"));
  EXPECT_THAT(ParseError(std::string(30000, '(')), HasSubstr("offset 64: nested deeper"));
  EXPECT_THAT(ParseError(std::string(30000, '(') + "a=1" + std::string(30000, ')')),
              HasSubstr("nested deeper"));
  // Alternating AND and OR chains add a level per parenthesis.
  std::string chain = "a = 1";
  for (int i = 0; i < 63; ++i)
    chain = absl::StrCat("b = 2 ", i % 2 ? "AND" : "OR", " (", chain, ")");
  EXPECT_TRUE(ParseFilter(chain).ok());
  EXPECT_THAT(ParseError("c = 3 AND (" + chain + ")"), HasSubstr("nested deeper than 64 levels"));

  // Nodes: an OR of 1,023 terms is 1,024 nodes; one more term is too many.
  std::vector<std::string> terms(kMaxFilterNodes - 1, "a = 1");
  EXPECT_TRUE(ParseFilter(absl::StrJoin(terms, " OR ")).ok());
  terms.push_back("a = 1");
  EXPECT_THAT(ParseError(absl::StrJoin(terms, " OR ")), HasSubstr("more than 1024 nodes"));
  // `!=` is two nodes.
  std::vector<std::string> negated(kMaxFilterNodes / 2, "a != 1");
  EXPECT_THAT(ParseError(absl::StrJoin(negated, " OR ")), HasSubstr("more than 1024 nodes"));

  // IN values, over the whole filter.
  std::vector<std::string> values(kMaxFilterInValues, "v");
  EXPECT_TRUE(ParseFilter("a IN (" + absl::StrJoin(values, ",") + ")").ok());
  EXPECT_THAT(
      ParseError("a IN (" + absl::StrJoin(values, ",") + ",w)"),
      HasSubstr(absl::StrCat("offset ", 6 + 2 * kMaxFilterInValues, ": more than 1024 IN values")));
  std::vector<std::string> half(kMaxFilterInValues / 2 + 1, "v");
  const std::string in_half = "a IN (" + absl::StrJoin(half, ",") + ")";
  EXPECT_THAT(ParseError(in_half + " OR " + in_half), HasSubstr("more than 1024 IN values"));
}

TEST(ValidateFilter, RefusesMalformedTrees) {
  auto error = [](const FilterNode& node) {
    absl::Status s = ValidateFilter(node);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    return std::string(s.message());
  };
  FilterNode no_value = T("a", "1");
  no_value.values.clear();
  EXPECT_THAT(error(no_value), HasSubstr("term node on \"a\" with 0 values"));
  EXPECT_THAT(error(FilterNode::In("a", {})), HasSubstr("IN node on \"a\" without values"));
  EXPECT_THAT(error(T("", "1")), HasSubstr("field name \"\""));
  EXPECT_THAT(error(T("a b", "1")), HasSubstr("field name \"a b\" is not letters"));
  EXPECT_THAT(error(FilterNode::Range("a", 5, 3)),
              HasSubstr("lower bound 5 above its upper bound 3"));
  FilterNode range_values = FilterNode::Range("a", 1, 2);
  range_values.values = {"x"};
  EXPECT_THAT(error(range_values), HasSubstr("range node with values"));
  FilterNode term_bounds = T("a", "1");
  term_bounds.lo = 1;
  EXPECT_THAT(error(term_bounds), HasSubstr("term node with range bounds"));
  FilterNode leaf_children = T("a", "1");
  leaf_children.children.push_back(T("b", "2"));
  EXPECT_THAT(error(leaf_children), HasSubstr("term node with children"));
  EXPECT_THAT(error(And({})), HasSubstr("and node without children"));
  FilterNode two = Not(T("a", "1"));
  two.children.push_back(T("b", "2"));
  EXPECT_THAT(error(two), HasSubstr("not node with 2 children"));
  FilterNode or_field = Or({T("a", "1")});
  or_field.field = "a";
  EXPECT_THAT(error(or_field), HasSubstr("or node with a field"));
  FilterNode unknown = T("a", "1");
  unknown.kind = static_cast<Kind>(17);
  EXPECT_THAT(error(unknown), HasSubstr("unknown node kind 17"));
  // Limits.
  FilterNode deep = T("a", "1");
  for (int i = 0; i < 63; ++i) deep = Not(std::move(deep));
  EXPECT_TRUE(ValidateFilter(deep).ok());
  EXPECT_THAT(error(Not(deep)), HasSubstr("nested deeper than 64 levels"));
  EXPECT_TRUE(ValidateFilter(Or(std::vector<FilterNode>(1023, T("a", "1")))).ok());
  EXPECT_THAT(error(Or(std::vector<FilterNode>(1024, T("a", "1")))),
              HasSubstr("more than 1024 nodes"));
  EXPECT_TRUE(ValidateFilter(FilterNode::In("a", std::vector<std::string>(1024, "v"))).ok());
  EXPECT_THAT(error(FilterNode::In("a", std::vector<std::string>(1025, "v"))),
              HasSubstr("more than 1024 IN values"));
}

TEST(ParseFilterInteger, Forms) {
  EXPECT_EQ(ParseFilterInteger("0"), 0);
  EXPECT_EQ(ParseFilterInteger("+12"), 12);
  EXPECT_EQ(ParseFilterInteger("-12"), -12);
  EXPECT_EQ(ParseFilterInteger("007"), 7);
  EXPECT_EQ(ParseFilterInteger("9223372036854775807"), kMax);
  EXPECT_EQ(ParseFilterInteger("-9223372036854775808"), kMin);
  for (const char* bad : {"", "-", "+", "9223372036854775808", "-9223372036854775809", "1e3", " 1",
                          "1 ", "0x10", "--1", "1.0"}) {
    EXPECT_EQ(ParseFilterInteger(bad), std::nullopt) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation.

// The documents' values, field by field, and the index built from them.
struct KeywordColumn {
  std::vector<std::string> dictionary;           // sorted, unique
  std::vector<std::vector<std::string>> values;  // per document
};
struct IntegerColumn {
  std::vector<IntegerBucket> buckets;
  std::vector<std::vector<int64_t>> values;  // per document, each in some bucket
};
struct Collection {
  uint32_t num_docs = 0;
  std::map<std::string, KeywordColumn> keywords;
  std::map<std::string, IntegerColumn> integers;
};

AttributeField BuildField(BitmapCodec codec, uint32_t num_docs, std::string name,
                          const std::vector<std::vector<uint32_t>>& ids_of_doc) {
  std::vector<uint32_t> rows, values;
  for (uint32_t doc = 0; doc < num_docs; ++doc) {
    std::set<uint32_t> ids(ids_of_doc[doc].begin(), ids_of_doc[doc].end());
    for (const uint32_t id : ids) {
      rows.push_back(doc);
      values.push_back(id);
    }
  }
  absl::StatusOr<BitmapColumns> columns = BuildBitmaps(codec, num_docs, values, rows);
  EXPECT_TRUE(columns.ok()) << columns.status();
  AttributeField field;
  field.name = std::move(name);
  field.columns = std::move(*columns);
  return field;
}

std::unique_ptr<AttributeIndex> BuildIndex(const Collection& c, BitmapCodec codec) {
  std::vector<AttributeField> fields;
  for (const auto& [name, column] : c.keywords) {
    std::vector<std::vector<uint32_t>> ids(c.num_docs);
    for (uint32_t doc = 0; doc < c.num_docs; ++doc) {
      for (const std::string& v : column.values[doc]) {
        auto it = std::lower_bound(column.dictionary.begin(), column.dictionary.end(), v);
        ids[doc].push_back(uint32_t(it - column.dictionary.begin()));
      }
    }
    AttributeField field = BuildField(codec, c.num_docs, name, ids);
    field.kind = AttributeKind::kKeyword;
    field.values = column.dictionary;
    fields.push_back(std::move(field));
  }
  for (const auto& [name, column] : c.integers) {
    std::vector<std::vector<uint32_t>> ids(c.num_docs);
    AttributeField field;
    field.kind = AttributeKind::kInteger;
    field.buckets = column.buckets;
    for (uint32_t doc = 0; doc < c.num_docs; ++doc) {
      for (const int64_t v : column.values[doc]) ids[doc].push_back(*field.BucketOf(v));
    }
    AttributeField built = BuildField(codec, c.num_docs, name, ids);
    field.name = built.name;
    field.columns = std::move(built.columns);
    fields.push_back(std::move(field));
  }
  absl::StatusOr<std::unique_ptr<AttributeIndex>> index =
      AttributeIndex::Create(c.num_docs, codec, std::move(fields));
  EXPECT_TRUE(index.ok()) << index.status();
  return std::move(*index);
}

// A random collection: keyword fields dense, skewed and sparse multi-valued; integer fields with
// buckets of one value, of several values (ChooseBuckets), and at int64's ends; some documents
// without a value and dictionary entries without documents.
Collection RandomCollection(std::mt19937_64& rng, uint32_t num_docs) {
  Collection c;
  c.num_docs = num_docs;
  std::uniform_real_distribution<double> u(0, 1);

  KeywordColumn& label = c.keywords["label"];
  label.dictionary = {"ham", "spam", "unused"};
  for (uint32_t d = 0; d < num_docs; ++d) label.values.push_back({u(rng) < 0.3 ? "spam" : "ham"});

  KeywordColumn& domain = c.keywords["domain"];
  for (int i = 0; i < 30; ++i) domain.dictionary.push_back(absl::StrCat("d", i, ".example.com"));
  for (const char* odd : {"a b", "x\"y", "caf\xC3\xA9", "1..2", "", "or"}) {
    domain.dictionary.push_back(odd);
  }
  std::sort(domain.dictionary.begin(), domain.dictionary.end());
  std::geometric_distribution<int> skew(0.15);
  for (uint32_t d = 0; d < num_docs; ++d) {
    std::vector<std::string> values;
    const double r = u(rng);
    const int n = r < 0.1 ? 0 : r < 0.85 ? 1 : 2 + int(rng() % 2);
    for (int i = 0; i < n; ++i) {
      // The last two dictionary entries are never used.
      values.push_back(domain.dictionary[skew(rng) % (domain.dictionary.size() - 2)]);
    }
    domain.values.push_back(values);
  }

  KeywordColumn& tag = c.keywords["tag"];
  tag.dictionary = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
  for (uint32_t d = 0; d < num_docs; ++d) {
    std::vector<std::string> values;
    for (const std::string& t : tag.dictionary) {
      if (u(rng) < 0.04) values.push_back(t);
    }
    tag.values.push_back(values);
  }

  // Years 1990..2010 but 2000, one bucket each; 20% of documents without one, 5% with two.
  IntegerColumn& year = c.integers["year"];
  for (int64_t y = 1990; y <= 2010; ++y) {
    if (y != 2000) year.buckets.push_back({y, y});
  }
  for (uint32_t d = 0; d < num_docs; ++d) {
    std::vector<int64_t> values;
    const double r = u(rng);
    const int n = r < 0.2 ? 0 : r < 0.95 ? 1 : 2;
    for (int i = 0; i < n; ++i) values.push_back(year.buckets[rng() % year.buckets.size()].lo);
    year.values.push_back(values);
  }

  // Lengths bucketed by equal frequency, with gaps between buckets.
  IntegerColumn& length = c.integers["length"];
  std::vector<int64_t> all;
  for (uint32_t d = 0; d < num_docs; ++d) {
    std::vector<int64_t> values;
    if (u(rng) < 0.9) values.push_back(int64_t(rng() % 200) * 5);
    if (u(rng) < 0.05) values.push_back(int64_t(rng() % 200) * 5);
    all.insert(all.end(), values.begin(), values.end());
    length.values.push_back(values);
  }
  length.buckets = ChooseBuckets(all, 12);
  if (length.buckets.empty()) length.buckets.push_back({0, 0});

  // int64's ends.
  IntegerColumn& big = c.integers["big"];
  big.buckets = {{kMin, kMin}, {kMin + 1, -10}, {-5, 5}, {7, 7}, {100, kMax - 1}, {kMax, kMax}};
  for (uint32_t d = 0; d < num_docs; ++d) {
    std::vector<int64_t> values;
    if (u(rng) < 0.7) {
      const IntegerBucket& b = big.buckets[rng() % big.buckets.size()];
      values.push_back(u(rng) < 0.5 ? b.lo : b.hi);
    }
    big.values.push_back(values);
  }
  return c;
}

// A bound that follows the buckets: an edge of one, or outside all of them.
std::optional<int64_t> RandomBound(std::mt19937_64& rng, const std::vector<IntegerBucket>& buckets,
                                   bool lower) {
  if (rng() % 4 == 0) return std::nullopt;
  const IntegerBucket& b = buckets[rng() % buckets.size()];
  switch (rng() % 3) {
    case 0:
      return lower ? b.lo : b.hi;
    case 1:
      if (lower && b.hi < kMax) return b.hi + 1;
      if (!lower && b.lo > kMin) return b.lo - 1;
      return lower ? b.lo : b.hi;
    default: {
      // Any value, kept when it lies outside every bucket.
      int64_t v = 0;
      if (__builtin_add_overflow(b.lo, int64_t(rng() % 7) - 3, &v)) return lower ? b.lo : b.hi;
      const auto it = std::find_if(buckets.begin(), buckets.end(),
                                   [&](const IntegerBucket& x) { return x.lo <= v && v <= x.hi; });
      if (it == buckets.end()) return v;
      return lower ? b.lo : b.hi;
    }
  }
}

FilterNode RandomFilter(std::mt19937_64& rng, const Collection& c, int depth) {
  const int choice = depth == 0 ? 0 : int(rng() % 7);
  if (choice >= 4) {
    std::vector<FilterNode> children(2 + rng() % 3);
    for (FilterNode& child : children) child = RandomFilter(rng, c, depth - 1);
    return choice == 4   ? FilterNode::Or(std::move(children))
           : choice == 5 ? FilterNode::And(std::move(children))
                         : FilterNode::Not(std::move(children[0]));
  }
  if (choice == 3) return FilterNode::Not(RandomFilter(rng, c, depth - 1));
  // A leaf.
  const size_t field = rng() % (c.keywords.size() + c.integers.size());
  if (field < c.keywords.size()) {
    auto it = c.keywords.begin();
    std::advance(it, field);
    const std::vector<std::string>& dictionary = it->second.dictionary;
    std::vector<std::string> values(rng() % 3 == 0 ? 1 + rng() % 4 : 1);
    for (std::string& v : values) v = dictionary[rng() % dictionary.size()];
    if (values.size() == 1 && rng() % 2 == 0) return FilterNode::Term(it->first, values[0]);
    return FilterNode::In(it->first, values);
  }
  auto it = c.integers.begin();
  std::advance(it, field - c.keywords.size());
  const std::vector<IntegerBucket>& buckets = it->second.buckets;
  std::vector<int64_t> exact;
  for (const IntegerBucket& b : buckets) {
    if (b.lo == b.hi) exact.push_back(b.lo);
  }
  if (!exact.empty() && rng() % 2 == 0) {
    std::vector<std::string> values(rng() % 3 == 0 ? 1 + rng() % 4 : 1);
    for (std::string& v : values) v = absl::StrCat(exact[rng() % exact.size()]);
    if (values.size() == 1 && rng() % 2 == 0) return FilterNode::Term(it->first, values[0]);
    return FilterNode::In(it->first, values);
  }
  while (true) {
    std::optional<int64_t> lo = RandomBound(rng, buckets, true);
    std::optional<int64_t> hi = RandomBound(rng, buckets, false);
    if (!lo || !hi || *lo <= *hi) return FilterNode::Range(it->first, lo, hi);
  }
}

// The brute force: the filter on one document's values.
bool Matches(const FilterNode& node, const Collection& c, uint32_t doc) {
  switch (node.kind) {
    case Kind::kAnd:
      return std::all_of(node.children.begin(), node.children.end(),
                         [&](const FilterNode& child) { return Matches(child, c, doc); });
    case Kind::kOr:
      return std::any_of(node.children.begin(), node.children.end(),
                         [&](const FilterNode& child) { return Matches(child, c, doc); });
    case Kind::kNot:
      return !Matches(node.children[0], c, doc);
    default:
      break;
  }
  if (auto k = c.keywords.find(node.field); k != c.keywords.end()) {
    for (const std::string& have : k->second.values[doc]) {
      if (std::find(node.values.begin(), node.values.end(), have) != node.values.end()) return true;
    }
    return false;
  }
  for (const int64_t have : c.integers.at(node.field).values[doc]) {
    if (node.kind == Kind::kRange) {
      if ((!node.lo || *node.lo <= have) && (!node.hi || have <= *node.hi)) return true;
    } else {
      for (const std::string& v : node.values) {
        if (*ParseFilterInteger(v) == have) return true;
      }
    }
  }
  return false;
}

TEST(EvaluateFilter, MatchesTheBruteForceOnRandomIndexes) {
  std::mt19937_64 rng(2002);
  size_t nonempty = 0, empty = 0, all = 0;
  for (const uint32_t num_docs : {1u, 31u, 100u, 5000u}) {
    const Collection c = RandomCollection(rng, num_docs);
    for (const BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
      SCOPED_TRACE(absl::StrCat(std::string(BitmapCodecName(codec)), ", ", num_docs, " documents"));
      const std::unique_ptr<AttributeIndex> index = BuildIndex(c, codec);
      ASSERT_NE(index, nullptr);
      const int filters = num_docs == 5000 ? 600 : 150;
      for (int i = 0; i < filters; ++i) {
        const FilterNode filter = RandomFilter(rng, c, int(rng() % 5));
        const std::string text = FilterToText(filter);
        absl::StatusOr<Bitmap> docs = EvaluateFilter(filter, *index);
        ASSERT_TRUE(docs.ok()) << text << ": " << docs.status();
        ASSERT_EQ(docs->codec(), codec);
        ASSERT_EQ(docs->num_rows(), num_docs);
        ASSERT_TRUE(ValidateBitmap(codec, num_docs, docs->words()).ok()) << text;
        std::vector<uint32_t> expected;
        for (uint32_t d = 0; d < num_docs; ++d) {
          if (Matches(filter, c, d)) expected.push_back(d);
        }
        ASSERT_EQ(docs->Rows(), expected) << text;
        EXPECT_DOUBLE_EQ(FilterSelectivity(*docs), double(expected.size()) / num_docs);
        // The compiled program, run 32 rows at a time, gives the same rows.
        absl::StatusOr<FilterProgram> program = CompileFilter(filter, *index);
        ASSERT_TRUE(program.ok()) << text << ": " << program.status();
        ASSERT_LE(program->max_stack, kMaxFilterProgramStack);
        const std::vector<uint32_t> words = RunFilterProgram(*program, *index);
        ASSERT_EQ(words.size(), (num_docs + 31) / 32);
        std::vector<uint32_t> program_rows;
        for (uint32_t d = 0; d < words.size() * 32; ++d) {
          if ((words[d / 32] >> (d % 32)) & 1) program_rows.push_back(d);
        }
        ASSERT_EQ(program_rows, expected) << text;
        // The text form evaluates the same.
        absl::StatusOr<FilterNode> back = ParseFilter(text);
        ASSERT_TRUE(back.ok()) << text << ": " << back.status();
        ASSERT_EQ(*back, filter) << text;
        nonempty += !expected.empty() && expected.size() < num_docs;
        empty += expected.empty();
        all += expected.size() == num_docs;
      }
    }
  }
  // The random filters reach every kind of answer.
  EXPECT_GT(nonempty, 500u);
  EXPECT_GT(empty, 50u);
  EXPECT_GT(all, 20u);
}

TEST(EvaluateFilter, TextFiltersOnAFixedIndex) {
  Collection c;
  c.num_docs = 6;
  c.keywords["domain"] = {{"a.com", "b.com", "c.com"},
                          {{"a.com"}, {"b.com"}, {"a.com", "b.com"}, {}, {"a.com"}, {}}};
  c.integers["year"] = {{{2000, 2000}, {2001, 2001}, {2003, 2003}},
                        {{2000}, {2001}, {2003}, {2000, 2003}, {}, {2001}}};
  c.integers["length"] = {{{0, 99}, {100, 199}, {300, 399}}, {{5}, {150}, {350}, {}, {99}, {100}}};
  for (const BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    const std::unique_ptr<AttributeIndex> index = BuildIndex(c, codec);
    auto rows = [&](std::string_view text) {
      absl::StatusOr<Bitmap> docs = EvaluateFilter(Parsed(text), *index);
      EXPECT_TRUE(docs.ok()) << text << ": " << docs.status();
      return docs.ok() ? docs->Rows() : std::vector<uint32_t>{999};
    };
    using V = std::vector<uint32_t>;
    EXPECT_EQ(rows("domain:a.com"), (V{0, 2, 4}));
    EXPECT_EQ(rows("domain != a.com"), (V{1, 3, 5}));
    EXPECT_EQ(rows("domain IN (a.com, b.com)"), (V{0, 1, 2, 4}));
    EXPECT_EQ(rows("domain = c.com"), V{});  // in the dictionary, on no document
    EXPECT_EQ(rows("year >= 2001"), (V{1, 2, 3, 5}));
    EXPECT_EQ(rows("year > 2001"), (V{2, 3}));
    EXPECT_EQ(rows("year = 2002..2002"), V{});  // between buckets: no document
    EXPECT_EQ(rows("year = .."), (V{0, 1, 2, 3, 5}));
    EXPECT_EQ(rows("NOT year = .."), V{4});
    EXPECT_EQ(rows("length = 0..199"), (V{0, 1, 4, 5}));
    EXPECT_EQ(rows("length >= 200"), V{2});
    EXPECT_EQ(rows("length = 200..299"), V{});
    EXPECT_EQ(rows("year >= 2001 AND domain:a.com OR length = 300..399"), (V{2}));
    EXPECT_EQ(rows("domain:a.com AND NOT year = 2003"), (V{0, 4}));
    EXPECT_EQ(rows("NOT domain:a.com AND NOT domain:b.com"), (V{3, 5}));
    EXPECT_EQ(rows("NOT NOT domain:b.com"), (V{1, 2}));
  }
}

class EvaluateFilterErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    Collection c;
    c.num_docs = 4;
    c.keywords["domain"] = {{"a.com", "b.com"}, {{"a.com"}, {"b.com"}, {}, {"a.com"}}};
    c.integers["year"] = {{{2000, 2000}, {2001, 2001}, {2003, 2003}, {2004, 2004}},
                          {{2000}, {2001}, {2003}, {}}};
    c.integers["length"] = {{{0, 99}, {100, 199}, {300, 399}}, {{5}, {150}, {350}, {}}};
    index_ = BuildIndex(c, BitmapCodec::kPlwah);
  }
  std::string Error(std::string_view text) const { return Error(Parsed(text)); }
  std::string Error(const FilterNode& filter) const {
    absl::StatusOr<Bitmap> docs = EvaluateFilter(filter, *index_);
    EXPECT_FALSE(docs.ok()) << FilterToText(filter);
    if (docs.ok()) return "";
    // Compiling refuses the filter with the same error.
    EXPECT_EQ(CompileFilter(filter, *index_).status(), docs.status());
    EXPECT_TRUE(absl::IsInvalidArgument(docs.status())) << docs.status();
    return std::string(docs.status().message());
  }
  std::unique_ptr<AttributeIndex> index_;
};

// The program of a small filter, op by op; columns numbered across fields in attribute order.
TEST(CompileFilter, PostfixOverColumnsInAttributeOrder) {
  Collection c;
  c.num_docs = 4;
  c.keywords["domain"] = {{"a.com", "b.com", "c.com"}, {{"a.com"}, {"b.com"}, {}, {"a.com"}}};
  c.integers["year"] = {{{2000, 2000}, {2001, 2001}}, {{2000}, {2001}, {2001}, {}}};
  const std::unique_ptr<AttributeIndex> index = BuildIndex(c, BitmapCodec::kWah);
  absl::StatusOr<FilterProgram> program =
      CompileFilter(Parsed("domain IN (a.com, b.com, c.com) AND NOT year = 2001"), *index);
  ASSERT_TRUE(program.ok()) << program.status();
  std::string ops;
  // Each operation as a word, a column as "c" and its number.
  constexpr base::EnumName<FilterOp::Code> kOpNames[] = {{FilterOp::Code::kEmpty, "empty"},
                                                         {FilterOp::Code::kNot, "not"},
                                                         {FilterOp::Code::kAnd, "and"},
                                                         {FilterOp::Code::kOr, "or"},
                                                         {FilterOp::Code::kAndNot, "andnot"}};
  for (const FilterOp& op : program->ops) {
    if (op.code == FilterOp::Code::kColumn) {
      absl::StrAppend(&ops, "c", op.column, " ");
    } else {
      absl::StrAppend(&ops, base::NameOf(kOpNames, op.code), " ");
    }
  }
  // Fields in the index's order; c.com is on no document, so it has no column.
  const bool domain_first = index->fields()[0].name == "domain";
  const uint32_t domain = domain_first ? 0 : 2, year = domain_first ? 2 : 0;
  EXPECT_EQ(ops, absl::StrCat("c", domain, " c", domain + 1, " or c", year + 1, " andnot "));
  EXPECT_EQ(program->max_stack, 2u);
  EXPECT_EQ(FilterProgramWords(*program, *index),
            FilterColumn(*index, domain).words().size() +
                FilterColumn(*index, domain + 1).words().size() +
                FilterColumn(*index, year + 1).words().size());
  EXPECT_TRUE(FilterColumn(*index, 1000).words().empty());
  EXPECT_EQ(RunFilterProgram(*program, *index), std::vector<uint32_t>{0b1001});
  program = CompileFilter(Parsed("NOT domain = c.com"), *index);
  ASSERT_TRUE(program.ok());
  EXPECT_EQ(program->ops.size(), 2u);
  EXPECT_EQ(RunFilterProgram(*program, *index), std::vector<uint32_t>{0b1111});  // 4 rows only
}

TEST_F(EvaluateFilterErrors, UnknownField) {
  EXPECT_THAT(Error("lang = en"),
              AllOf(HasSubstr("unknown field \"lang\""),
                    HasSubstr("domain (keyword), length (integer), year (integer)")));
  // Errors do not wait for data: the unknown field after an empty AND is still reported.
  EXPECT_THAT(Error("domain = a.com AND year = 2004 AND lang = en"),
              HasSubstr("unknown field \"lang\""));
  absl::StatusOr<std::unique_ptr<AttributeIndex>> none =
      AttributeIndex::Create(10, BitmapCodec::kWah, {});
  ASSERT_TRUE(none.ok());
  absl::StatusOr<Bitmap> docs = EvaluateFilter(Parsed("year = 2002"), **none);
  EXPECT_THAT(docs.status().message(),
              HasSubstr("unknown field \"year\": this index stores no attributes"));
}

TEST_F(EvaluateFilterErrors, KeywordFields) {
  EXPECT_THAT(Error("domain = c.com"),
              HasSubstr("unknown value \"c.com\" of keyword field \"domain\""));
  EXPECT_THAT(Error("domain IN (a.com, \"c d\")"),
              HasSubstr("unknown value \"c d\" of keyword field \"domain\""));
  EXPECT_THAT(Error("domain >= 3"),
              HasSubstr("the range domain >= 3 is on keyword field \"domain\"; ranges take "
                        "integer fields"));
  EXPECT_THAT(Error("domain = 1..2"), HasSubstr("keyword field \"domain\""));
}

// On one part of a collection, a value this part lacks matches nothing here; what no part could
// answer exactly (a bound inside a bucket, an unknown field) is still refused.
TEST_F(EvaluateFilterErrors, OnAPartAValueItLacksMatchesNothing) {
  auto rows = [&](std::string_view text) -> std::vector<uint32_t> {
    absl::StatusOr<Bitmap> docs = EvaluateFilterOnPart(Parsed(text), *index_);
    EXPECT_TRUE(docs.ok()) << text << ": " << docs.status();
    return docs.ok() ? docs->Rows() : std::vector<uint32_t>{99};
  };
  EXPECT_EQ(rows("domain = c.com"), std::vector<uint32_t>{});
  EXPECT_EQ(rows("domain IN (a.com, c.com)"), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(rows("NOT year = 2002"), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(rows("year IN (1999, 2001)"), std::vector<uint32_t>{1});
  for (const char* refused : {"length = 150", "lang = en", "year = abc"}) {
    EXPECT_FALSE(EvaluateFilterOnPart(Parsed(refused), *index_).ok()) << refused;
  }
}

TEST_F(EvaluateFilterErrors, IntegerFields) {
  EXPECT_THAT(Error("year = abc"),
              HasSubstr("\"abc\" is not an integer (field \"year\" is an integer field)"));
  EXPECT_THAT(Error("year IN (2000, 2001.5)"), HasSubstr("\"2001.5\" is not an integer"));
  EXPECT_THAT(Error("year = 2002"),
              HasSubstr("unknown value 2002 of integer field \"year\": no document has it"));
  EXPECT_THAT(Error("year IN (2000, 1999)"), HasSubstr("unknown value 1999"));
  EXPECT_THAT(Error("length = 150"),
              HasSubstr("length = 150 cuts through bucket [100, 199] of integer field "
                        "\"length\"; terms and ranges must follow its buckets: the nearest is "
                        "length = 100..199"));
  EXPECT_THAT(Error("length IN (100)"), HasSubstr("cuts through bucket [100, 199]"));
  EXPECT_THAT(Error("length >= 150"),
              HasSubstr("the range length >= 150 cuts through bucket [100, 199] of integer field "
                        "\"length\"; ranges must follow its buckets: the nearest lower bounds "
                        "are 100 and 200"));
  EXPECT_THAT(Error("length > 100"), HasSubstr("the range length >= 101 cuts through"));
  EXPECT_THAT(Error("length <= 150"), HasSubstr("the nearest upper bounds are 99 and 199"));
  EXPECT_THAT(Error("length = 0..150"), HasSubstr("the nearest upper bounds are 99 and 199"));
  EXPECT_THAT(Error("length = 50..250"), HasSubstr("the nearest lower bounds are 0 and 100"));
  EXPECT_THAT(Error(FilterNode::Range("year", 2004, 2000)),
              HasSubstr("lower bound 2004 above its upper bound 2000"));
}

TEST_F(EvaluateFilterErrors, ValidRangesThatCoverNoDocument) {
  for (const char* text : {"year = 2004", "year = 2002..2002", "length = 200..299", "length >= 400",
                           "length < 0", "year IN (2004)"}) {
    absl::StatusOr<Bitmap> docs = EvaluateFilter(Parsed(text), *index_);
    ASSERT_TRUE(docs.ok()) << text << ": " << docs.status();
    EXPECT_EQ(docs->Count(), 0u) << text;
    EXPECT_EQ(FilterSelectivity(*docs), 0.0);
  }
}

TEST_F(EvaluateFilterErrors, MalformedTrees) {
  EXPECT_THAT(Error(FilterNode::In("domain", {})), HasSubstr("without values"));
  EXPECT_THAT(Error(FilterNode::And({})), HasSubstr("without children"));
}

}  // namespace
}  // namespace tandem::filter
