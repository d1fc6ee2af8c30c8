// Tests of MakeSnippet: the window with the most distinct query terms, highlights on the tokens
// (analyzed: case, possessives, stems), word and UTF-8 boundaries, the bound on its length.
#include "server/snippet.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::server {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

class SnippetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto analyzer = index::Analyzer::Create(index::AnalyzerConfig{});
    ASSERT_TRUE(analyzer.ok());
    analyzer_ = *std::move(analyzer);
  }
  std::vector<std::string> Marked(const Snippet& s) {
    std::vector<std::string> marked;
    for (const auto& [begin, end] : s.highlights)
      marked.push_back(s.text.substr(begin, end - begin));
    return marked;
  }
  std::unique_ptr<index::Analyzer> analyzer_;
};

TEST_F(SnippetTest, PicksTheWindowWithTheMostDistinctTerms) {
  const std::string filler(300, 'x');
  const std::string text = "A bear here. " + filler + " then a Black Bear's den by the river. " +
                           filler + " and one more bear.";
  const Snippet s = MakeSnippet(*analyzer_, text, {"black", "bear"}, 80);
  EXPECT_LE(s.text.size(), 80u);
  EXPECT_THAT(Marked(s), ElementsAre("Black", "Bear's"));
  EXPECT_TRUE(s.starts_inside);
  EXPECT_TRUE(s.ends_inside);
  // Whole words only: no piece of the x run at either end.
  EXPECT_EQ(s.text.find("xx"), std::string::npos) << s.text;
}

TEST_F(SnippetTest, ShortTextIsWholeAndEveryOccurrenceIsMarked) {
  const Snippet s = MakeSnippet(*analyzer_, "Bears\neat salmon;\tbears sleep.", {"bear"}, 200);
  EXPECT_EQ(s.text, "Bears eat salmon; bears sleep.");
  EXPECT_THAT(s.highlights, ElementsAre(Pair(0, 5), Pair(18, 23)));
  EXPECT_FALSE(s.starts_inside);
  EXPECT_FALSE(s.ends_inside);
}

TEST_F(SnippetTest, WithoutAQueryTermTheBeginningCutAtAWord) {
  const Snippet s =
      MakeSnippet(*analyzer_, "caf\u00e9 society meets on mondays and fridays", {"bear"}, 12);
  EXPECT_EQ(s.text, "caf\u00e9");  // "café society" would be 13 bytes
  EXPECT_TRUE(s.highlights.empty());
  EXPECT_TRUE(s.ends_inside);
  // One long word: cut on a UTF-8 boundary, never inside a character.
  const Snippet word = MakeSnippet(*analyzer_, "\u00e9\u00e9\u00e9\u00e9\u00e9", {"x"}, 5);
  EXPECT_EQ(word.text, "\u00e9\u00e9");
}

TEST_F(SnippetTest, EmptyInputsGiveAnEmptySnippet) {
  EXPECT_TRUE(MakeSnippet(*analyzer_, "", {"bear"}, 100).text.empty());
  EXPECT_TRUE(MakeSnippet(*analyzer_, "a bear", {"bear"}, 0).text.empty());
}

}  // namespace
}  // namespace tandem::server
