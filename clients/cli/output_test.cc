#include "clients/cli/output.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

tandem::v1::SearchResponse Response() {
  tandem::v1::SearchResponse r;
  auto* h = r.add_hits();
  h->set_docid(12);
  h->set_external_id("doc12");
  h->set_score(7.5f);
  h = r.add_hits();
  h->set_docid(3);
  h->set_external_id("a-much-longer-external-id");
  h->set_score(2.25f);
  r.mutable_stats()->set_engine("cpu");
  r.mutable_stats()->set_executed_mode(tandem::v1::QUERY_MODE_OR);
  r.mutable_stats()->set_postings_decoded(1234);
  r.mutable_stats()->add_terms("t1");
  r.mutable_stats()->add_terms("t2");
  return r;
}

TEST(OutputTest, TableHasOneRowPerHitAndAStatsLine) {
  const std::string out = FormatSearchResponse(Response());
  EXPECT_THAT(out, HasSubstr("rank"));
  EXPECT_THAT(out, HasSubstr("    1    7.500000  doc12"));
  EXPECT_THAT(out, HasSubstr("    2    2.250000  a-much-longer-external-id"));
  EXPECT_THAT(out, HasSubstr("2 hits; engine cpu, executed or; 1234 postings decoded"));
  EXPECT_THAT(out, HasSubstr("terms: t1 t2"));
}

TEST(OutputTest, ADegradedAnswerNamesTheMissingShards) {
  tandem::v1::SearchResponse response = Response();
  EXPECT_THAT(FormatSearchResponse(response), Not(HasSubstr("degraded")));
  response.set_degraded(true);
  response.add_missing_shards(1);
  response.add_missing_shards(3);
  EXPECT_THAT(FormatSearchResponse(response),
              HasSubstr("degraded: no answer from shard(s) 1, 3; these are the others' hits"));
}

TEST(OutputTest, StoredFieldsFollowTheirHitOnOneLineEach) {
  tandem::v1::SearchResponse response = Response();
  tandem::v1::StoredField* subject = response.mutable_hits(0)->add_fields();
  subject->set_name("subject");
  subject->set_value("Re: free\nmoney");
  tandem::v1::StoredField* long_one = response.mutable_hits(1)->add_fields();
  long_one->set_name("title");
  long_one->set_value(std::string(95, 'x') + "\u00e9\u00e9");  // cut inside the first é
  const std::string out = FormatSearchResponse(response);
  EXPECT_THAT(out, HasSubstr(" 12\n                   subject: Re: free money\n    2 "));
  EXPECT_THAT(out, HasSubstr("title: " + std::string(95, 'x') + "...\n"));
  EXPECT_EQ(ToJson(response)["hits"][0]["fields"][0]["value"], "Re: free\nmoney");
}

TEST(OutputTest, SnippetsMarkTheirHighlights) {
  tandem::v1::SearchResponse response = Response();
  tandem::v1::Snippet* snippet = response.mutable_hits(0)->mutable_snippet();
  snippet->set_text("send free money now");
  for (auto [begin, end] : {std::pair{5u, 9u}, std::pair{10u, 15u}}) {
    tandem::v1::Highlight* h = snippet->add_highlights();
    h->set_begin(begin);
    h->set_end(end);
  }
  snippet->set_starts_inside(true);
  EXPECT_THAT(FormatSearchResponse(response),
              HasSubstr("\n                   ...send [free] [money] now\n    2 "));
  // A span outside the text is not followed.
  snippet->mutable_highlights(1)->set_end(99);
  EXPECT_THAT(FormatSearchResponse(response), HasSubstr("...send [free] money now\n"));
}

TEST(OutputTest, JsonUsesProtoFieldNames) {
  const nlohmann::json j = ToJson(Response());
  ASSERT_EQ(j["hits"].size(), 2u);
  EXPECT_EQ(j["hits"][0]["external_id"], "doc12");
  EXPECT_EQ(j["hits"][0]["docid"], 12);
  EXPECT_EQ(j["stats"]["engine"], "cpu");
  EXPECT_EQ(j["stats"]["executed_mode"], "QUERY_MODE_OR");
  EXPECT_EQ(j["request_id"], "");  // defaults are printed too
}

TEST(OutputTest, StatusLineNamesTheCode) {
  EXPECT_EQ(StatusLine(absl::InvalidArgumentError("k must be between 1 and 10000, got 0")),
            "INVALID_ARGUMENT: k must be between 1 and 10000, got 0");
  EXPECT_EQ(StatusJson(absl::UnavailableError("draining"))["code"], "UNAVAILABLE");
}

}  // namespace
}  // namespace tandem::cli
