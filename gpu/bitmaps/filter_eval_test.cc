// Filters evaluated on the device against filter::EvaluateFilter: the same bitmap byte for byte,
// for both codecs, on indexes of 1 to 3M documents (sizes around 31 and 32 rows), with uniform,
// skewed, sorted (long fills), sparse and multi-valued columns, for random trees of every node
// kind; the same errors; and device programs that are not valid. Skips without a device.
#include "gpu/bitmaps/filter_eval.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "filter/bitmap.h"
#include "gmock/gmock.h"
#include "gpu/device/device.h"
#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

using filter::AttributeField;
using filter::AttributeIndex;
using filter::BitmapCodec;
using filter::FilterNode;
using ::testing::HasSubstr;

// Fields: "kw" (keyword, 6 values, uniform, one value on no document), "skew" (keyword, 40
// values, Zipf-like, some documents without one), "sorted" (keyword, 4 values in long runs),
// "tags" (keyword, multi-valued, 10 values), "year" (integer, one bucket per year 2000-2009) and
// "len" (integer, buckets of 100).
std::unique_ptr<AttributeIndex> RandomAttributes(std::mt19937_64& rng, uint32_t num_docs,
                                                 BitmapCodec codec) {
  std::vector<AttributeField> fields;
  auto keyword = [&](std::string name, uint32_t cardinality, std::vector<uint32_t> values,
                     std::vector<uint32_t> rows) {
    AttributeField f;
    f.name = std::move(name);
    for (uint32_t v = 0; v < cardinality; ++v) f.values.push_back(absl::StrCat("v", 100 + v));
    f.columns = *filter::BuildBitmaps(codec, num_docs, values, rows);
    fields.push_back(std::move(f));
  };
  auto integer = [&](std::string name, std::vector<filter::IntegerBucket> buckets,
                     std::vector<uint32_t> values) {
    AttributeField f;
    f.name = std::move(name);
    f.kind = filter::AttributeKind::kInteger;
    f.buckets = std::move(buckets);
    f.columns = *filter::BuildBitmaps(codec, num_docs, values);
    fields.push_back(std::move(f));
  };
  std::vector<uint32_t> values(num_docs), rows;
  for (uint32_t& v : values) v = static_cast<uint32_t>(rng() % 5);  // v105 on no document
  keyword("kw", 6, values, {});
  values.clear();
  for (uint32_t d = 0; d < num_docs; ++d) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    if (u < 0.2) continue;
    rows.push_back(d);
    values.push_back(std::min<uint32_t>(39, static_cast<uint32_t>(1.0 / (u * u)) - 1));
  }
  keyword("skew", 40, values, rows);
  values.assign(num_docs, 0);
  for (uint32_t d = 0; d < num_docs; ++d) values[d] = uint32_t(uint64_t{d} * 4 / num_docs);
  keyword("sorted", 4, values, {});
  values.clear();
  rows.clear();
  for (uint32_t d = 0; d < num_docs; ++d) {
    for (uint32_t t = 0; t < 10; ++t) {
      if (rng() % 7 == 0) {
        rows.push_back(d);
        values.push_back(t);
      }
    }
  }
  keyword("tags", 10, values, rows);
  std::vector<filter::IntegerBucket> years, lengths;
  for (int64_t y = 2000; y < 2010; ++y) years.push_back({y, y});
  for (int64_t l = 0; l < 1000; l += 100) lengths.push_back({l, l + 99});
  values.resize(num_docs);
  for (uint32_t& v : values) v = static_cast<uint32_t>(rng() % 10);
  integer("year", years, values);
  for (uint32_t& v : values) v = static_cast<uint32_t>(rng() % 10);
  integer("len", lengths, values);
  auto attributes = AttributeIndex::Create(num_docs, codec, std::move(fields));
  EXPECT_TRUE(attributes.ok()) << attributes.status();
  return attributes.ok() ? *std::move(attributes) : nullptr;
}

FilterNode RandomLeaf(std::mt19937_64& rng) {
  const char* keywords[] = {"kw", "skew", "sorted", "tags"};
  auto value = [&](const char* field) {
    const int cardinality = std::string(field) == "kw"       ? 6
                            : std::string(field) == "skew"   ? 40
                            : std::string(field) == "sorted" ? 4
                                                             : 10;
    return absl::StrCat("v", 100 + rng() % cardinality);
  };
  switch (rng() % 5) {
    case 0: {
      const char* f = keywords[rng() % 4];
      return FilterNode::Term(f, value(f));
    }
    case 1: {
      const char* f = keywords[rng() % 4];
      std::vector<std::string> values;
      for (int i = 0, n = 1 + int(rng() % 12); i < n; ++i) values.push_back(value(f));
      return FilterNode::In(f, values);
    }
    case 2:
      return FilterNode::Term("year", absl::StrCat(2000 + rng() % 10));
    case 3: {
      const int64_t lo = 2000 + int64_t(rng() % 10), hi = lo + int64_t(rng() % 5);
      return FilterNode::Range("year", rng() % 4 == 0 ? std::nullopt : std::optional<int64_t>(lo),
                               hi);
    }
    default: {
      const int64_t lo = 100 * int64_t(rng() % 10);
      return FilterNode::Range("len", lo,
                               rng() % 3 == 0 ? std::nullopt : std::optional<int64_t>(lo + 199));
    }
  }
}

FilterNode RandomFilter(std::mt19937_64& rng, int depth) {
  if (depth == 0 || rng() % 3 == 0) return RandomLeaf(rng);
  switch (rng() % 3) {
    case 0:
      return FilterNode::Not(RandomFilter(rng, depth - 1));
    default: {
      std::vector<FilterNode> children;
      for (int i = 0, n = 2 + int(rng() % 3); i < n; ++i) {
        children.push_back(RandomFilter(rng, depth - 1));
      }
      return rng() % 2 == 0 ? FilterNode::And(std::move(children))
                            : FilterNode::Or(std::move(children));
    }
  }
}

TEST(GpuFilterEvaluatorTest, SameBitmapsAsTheCpu) {
  if (!ProbeDevice().ok()) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 rng(2013);
  for (const uint32_t num_docs : {1u, 31u, 32u, 33u, 1000u, 100000u, 3000000u}) {
    for (const BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
      SCOPED_TRACE(
          absl::StrCat(std::string(filter::BitmapCodecName(codec)), ", ", num_docs, " documents"));
      const std::unique_ptr<AttributeIndex> attributes = RandomAttributes(rng, num_docs, codec);
      ASSERT_NE(attributes, nullptr);
      auto gpu = GpuFilterEvaluator::Create(*attributes);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_GT((*gpu)->device_bytes(), 0u);
      const int filters = num_docs >= 1000000 ? 40 : 150;
      for (int i = 0; i < filters; ++i) {
        const FilterNode filter = RandomFilter(rng, int(rng() % 5));
        const std::string text = filter::FilterToText(filter);
        auto expected = filter::EvaluateFilter(filter, *attributes);
        ASSERT_TRUE(expected.ok()) << text << ": " << expected.status();
        FilterEvalTimes times;
        auto got = (*gpu)->Evaluate(filter, &times);
        ASSERT_TRUE(got.ok()) << text << ": " << got.status();
        ASSERT_EQ(got->codec(), codec);
        ASSERT_EQ(got->num_rows(), num_docs);
        ASSERT_TRUE(got->words() == expected->words())
            << text << ": " << got->Count() << " rows, expected " << expected->Count();
        EXPECT_GT(times.evaluate_ms, 0.0);
      }
    }
  }
}

TEST(GpuFilterEvaluatorTest, ErrorsAndBadPrograms) {
  if (!ProbeDevice().ok()) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 rng(7);
  const std::unique_ptr<AttributeIndex> attributes =
      RandomAttributes(rng, 5000, BitmapCodec::kPlwah);
  ASSERT_NE(attributes, nullptr);
  auto gpu = GpuFilterEvaluator::Create(*attributes);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  // The CPU evaluation's errors, word for word.
  for (const FilterNode& bad :
       {FilterNode::Term("absent", "x"), FilterNode::Term("kw", "nope"),
        FilterNode::Range("kw", 1, 2), FilterNode::Term("len", "150"), FilterNode::And({})}) {
    auto expected = filter::EvaluateFilter(bad, *attributes);
    ASSERT_FALSE(expected.ok());
    EXPECT_EQ((*gpu)->Evaluate(bad).status(), expected.status());
  }
  // Programs the compiler never makes are refused before they reach the kernel.
  using Op = filter::FilterOp;
  auto run = [&](std::vector<Op> ops, uint32_t max_stack) {
    filter::FilterProgram program;
    program.ops = std::move(ops);
    program.max_stack = max_stack;
    return (*gpu)->Run(program).status();
  };
  EXPECT_THAT(run({{Op::Code::kColumn, 100000}}, 1).message(), HasSubstr("not valid here"));
  EXPECT_THAT(run({{Op::Code::kColumn, 0}, {Op::Code::kAnd}}, 2).message(),
              HasSubstr("op 1 (code 3"));
  EXPECT_THAT(run({{Op::Code::kNot}}, 1).message(), HasSubstr("not valid here"));
  EXPECT_THAT(run({{Op::Code::kColumn, 0}, {Op::Code::kColumn, 1}}, 2).message(),
              HasSubstr("leave one word"));
  EXPECT_THAT(run({{Op::Code::kColumn, 0}, {Op::Code::kColumn, 1}, {Op::Code::kOr}}, 1).message(),
              HasSubstr("passes its stack of 1"));
  EXPECT_THAT(run({{Op::Code::kEmpty}}, 100).message(), HasSubstr("at most 66"));
  EXPECT_THAT(run({}, 1).message(), HasSubstr("leave one word"));
  EXPECT_TRUE(run({{Op::Code::kEmpty}, {Op::Code::kNot}}, 1).ok());
}

TEST(GpuFilterEvaluatorTest, WithoutADeviceCreateSaysSo) {
  if (ProbeDevice().ok()) GTEST_SKIP() << "a device is present";
  std::mt19937_64 rng(1);
  const std::unique_ptr<AttributeIndex> attributes = RandomAttributes(rng, 100, BitmapCodec::kWah);
  ASSERT_NE(attributes, nullptr);
  auto gpu = GpuFilterEvaluator::Create(*attributes);
  EXPECT_FALSE(gpu.ok());
}

}  // namespace
}  // namespace tandem::gpu
