#include "index/analyzer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::index {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Analyze(absl::string_view text, const AnalyzerConfig& config = {}) {
  auto analyzer = Analyzer::Create(config);
  EXPECT_TRUE(analyzer.ok()) << analyzer.status();
  std::vector<std::string> terms;
  (*analyzer)->Analyze(text, &terms);
  return terms;
}

// Token sequences of Anserini's DefaultEnglishAnalyzer (StandardTokenizer, EnglishPossessiveFilter,
// LowerCaseFilter, 33 stop words, PorterStemFilter).
TEST(AnalyzerTest, EnglishChain) {
  EXPECT_THAT(Analyze("The quick brown fox's jumps over the lazy dogs."),
              ElementsAre("quick", "brown", "fox", "jump", "over", "lazi", "dog"));
  EXPECT_THAT(Analyze("Running runs ran easily"), ElementsAre("run", "run", "ran", "easili"));
  EXPECT_THAT(Analyze("Proteins PROTEIN protein's"), ElementsAre("protein", "protein", "protein"));
}

TEST(AnalyzerTest, StandardTokenizerWordBoundaries) {
  // UAX #29: letters joined by '.' or '\'' stay one word, numbers keep their separators,
  // hyphens and slashes split.
  EXPECT_THAT(Analyze("U.S.A. 3.14 1,000 e-mail and/or can't"),
              ElementsAre("u.s.a", "3.14", "1,000", "e", "mail", "can't"));
  EXPECT_THAT(Analyze("snake_case CamelCase"), ElementsAre("snake_cas", "camelcas"));
  EXPECT_THAT(Analyze("  ...!!! ---  "), IsEmpty());
}

TEST(AnalyzerTest, PossessiveVariants) {
  EXPECT_THAT(Analyze("John's JOHN'S john\xE2\x80\x99s"), ElementsAre("john", "john", "john"));
  EXPECT_THAT(Analyze("O'Neil's"), ElementsAre("o'neil"));
}

TEST(AnalyzerTest, StopWordsOnly) {
  EXPECT_THAT(Analyze("the and of to be it IS"), IsEmpty());
  EXPECT_EQ(LuceneEnglishStopWords().size(), 33u);
}

TEST(AnalyzerTest, UnicodeLowerCasing) {
  EXPECT_THAT(Analyze("CAFÉ Ñandú ΑΘΗΝΑ", {.stemmer = "none"}),
              ElementsAre("café", "ñandú", "αθηνα"));
}

TEST(AnalyzerTest, InvalidUtf8NeverCrashes) {
  std::vector<std::string> t =
      Analyze(std::string("ab\xff\xfe"
                          "cd \xc3 ef",
                          11));
  EXPECT_FALSE(t.empty());
}

TEST(AnalyzerTest, LongTokensAreSplitAt255) {
  std::vector<std::string> t = Analyze(std::string(600, 'x'), {.stemmer = "none"});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].size(), 255u);
  EXPECT_EQ(t[2].size(), 90u);
}

TEST(AnalyzerTest, AlnumTokenizerForSyntheticCollections) {
  AnalyzerConfig c{.tokenizer = "alnum", .possessive = false, .stemmer = "none"};
  EXPECT_THAT(Analyze("Hello, World's 2nd-best caf\xC3\xA9!", c),
              ElementsAre("hello", "world", "s", "2nd", "best", "caf"));
}

TEST(AnalyzerTest, NoStopNoStem) {
  AnalyzerConfig c{.stopwords = "none", .stemmer = "none"};
  EXPECT_THAT(Analyze("The Running", c), ElementsAre("the", "running"));
}

TEST(AnalyzerTest, NormalizeOneToken) {
  auto a = Analyzer::Create({});
  ASSERT_TRUE(a.ok());
  std::string term;
  EXPECT_TRUE((*a)->Normalize("Proteins", &term));
  EXPECT_EQ(term, "protein");
  EXPECT_FALSE((*a)->Normalize("The", &term));
}

TEST(AnalyzerTest, BadConfigurations) {
  EXPECT_EQ(Analyzer::Create({.tokenizer = "whitespace"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Analyzer::Create({.stopwords = "french"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto s = Analyzer::Create({.stemmer = "klingon"}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("porter"));
}

TEST(AnalyzerTest, DescribeNamesTheChain) {
  EXPECT_EQ(AnalyzerConfig{}.Describe(), "standard+possessive+lowercase+stop(lucene)+porter");
}

TEST(AnalyzerTest, OffsetsSpanEachTermsToken) {
  auto analyzer = Analyzer::Create(AnalyzerConfig{});
  ASSERT_TRUE(analyzer.ok());
  const std::string text = "The dog's BARKING, caf\u00e9 bears!";
  std::vector<Analyzer::TermSpan> spans;
  (*analyzer)->AnalyzeWithOffsets(text, &spans);
  std::vector<std::string> terms;
  (*analyzer)->Analyze(text, &terms);
  ASSERT_EQ(spans.size(), terms.size());
  for (size_t i = 0; i < spans.size(); ++i) EXPECT_EQ(spans[i].term, terms[i]);
  ASSERT_EQ(spans.size(), 4u);  // "the" is a stop word
  EXPECT_EQ(text.substr(spans[0].begin, spans[0].end - spans[0].begin), "dog's");
  EXPECT_EQ(spans[0].term, "dog");
  EXPECT_EQ(text.substr(spans[1].begin, spans[1].end - spans[1].begin), "BARKING");
  EXPECT_EQ(text.substr(spans[2].begin, spans[2].end - spans[2].begin), "caf\u00e9");
  EXPECT_EQ(text.substr(spans[3].begin, spans[3].end - spans[3].begin), "bears");
}

}  // namespace
}  // namespace tandem::index
