#include "clients/cli/batch_input.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::cli {
namespace {

using ::testing::ElementsAre;

TEST(BatchInputTest, LineFormats) {
  EXPECT_EQ(ParseBatchLine("q1\tprotein folding", 1), (BatchQuery{"q1", "protein folding"}));
  EXPECT_EQ(ParseBatchLine("701:pest control", 1), (BatchQuery{"701", "pest control"}));
  // Million Query 2009 keeps its priority inside the text.
  EXPECT_EQ(ParseBatchLine("20001:1:obama family tree", 1),
            (BatchQuery{"20001", "1:obama family tree"}));
  EXPECT_EQ(ParseBatchLine("plain query text", 7), (BatchQuery{"7", "plain query text"}));
  // A colon after a space is part of the text, not an id separator.
  EXPECT_EQ(ParseBatchLine("what is it: a question", 3),
            (BatchQuery{"3", "what is it: a question"}));
  EXPECT_EQ(ParseBatchLine(":leading colon", 4), (BatchQuery{"4", ":leading colon"}));
  // A word without a digit before a colon is text: a mail subject, a URL.
  EXPECT_EQ(ParseBatchLine("re: free money", 5), (BatchQuery{"5", "re: free money"}));
  EXPECT_EQ(ParseBatchLine("http://example.com", 6), (BatchQuery{"6", "http://example.com"}));
  EXPECT_EQ(ParseBatchLine("q12:a query", 8), (BatchQuery{"q12", "a query"}));
  EXPECT_EQ(ParseBatchLine("q2\tcr line\r", 1), (BatchQuery{"q2", "cr line"}));
}

TEST(BatchInputTest, ReadsLinesSkippingBlanks) {
  std::istringstream in("first query\n\nq2\tsecond\n  \n3:third\n");
  EXPECT_THAT(ReadBatchQueries(in),
              ElementsAre(BatchQuery{"1", "first query"}, BatchQuery{"q2", "second"},
                          BatchQuery{"3", "third"}));
}

}  // namespace
}  // namespace tandem::cli
