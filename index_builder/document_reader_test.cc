// Tests of the document readers: every format on the small fixtures under tests/data/readers (ids,
// text, fields, bad documents reported with file:line and skipped), the factory's errors, directory
// walking, and document counts on the real collections of ../shared/data.
#include "index_builder/document_reader.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index_builder/utf8_test_util.h"

namespace tandem::index_builder {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::StartsWith;

std::string SourceDir() {
  const char* dir = std::getenv("TANDEM_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string Fixture(std::string_view relative) {
  return absl::StrCat(SourceDir(), "/tests/data/readers/", std::string(relative));
}

struct Collected {
  std::vector<Document> docs;
  std::vector<std::string> bad;  // messages of the reported bad documents
};

Collected ReadAll(std::string_view format, const std::string& path) {
  Collected collected;
  ReaderOptions options;
  options.on_bad_document = [&collected](const absl::Status& status) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    collected.bad.emplace_back(status.message());
  };
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader(format, path, options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return collected;
  Document doc;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    collected.docs.push_back(doc);
  }
  return collected;
}

std::vector<std::string> Ids(const Collected& collected) {
  std::vector<std::string> ids;
  for (const Document& doc : collected.docs) ids.push_back(doc.external_id);
  return ids;
}

std::vector<std::string> FieldValues(const Document& doc, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& [field, value] : doc.fields) {
    if (field == name) values.push_back(value);
  }
  return values;
}

TEST(DocumentReaderTest, UnknownFormatListsTheKnownOnes) {
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader("xml", Fixture("lines"), {});
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& name : DocumentFormatNames()) {
    EXPECT_THAT(std::string(reader.status().message()), HasSubstr(name));
  }
  EXPECT_THAT(DocumentFormatNames(), ElementsAre("beir", "trec", "smart", "npl", "reuters",
                                                 "wikiextractor", "email", "lines"));
}

TEST(DocumentReaderTest, MissingPathIsNotFound) {
  const std::string path = Fixture("no/such/file");
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader = OpenDocumentReader("lines", path, {});
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(reader.status().message()), HasSubstr(path));
}

TEST(DocumentReaderTest, DirectoryWithoutWantedFilesIsNotFound) {
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader("reuters", Fixture("smart"), {});
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(reader.status().message()), HasSubstr("*.sgm"));
}

TEST(DocumentReaderTest, WalksDirectoriesInSortedOrderSkippingHiddenEntries) {
  const Collected got = ReadAll("lines", Fixture("walk"));
  EXPECT_THAT(Ids(got), ElementsAre("a/z.txt:1", "a.txt:1", "b.txt:1"));
  EXPECT_EQ(got.docs[0].location, Fixture("walk") + "/a/z.txt:1");
}

TEST(DocumentReaderTest, BadDocumentsWithoutCallbackAreSkippedSilently) {
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader("beir", Fixture("beir/corpus.jsonl"), {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  Document doc;
  int count = 0;
  while (*(*reader)->Next(&doc)) ++count;
  EXPECT_EQ(count, 4);
}

TEST(BeirReaderTest, ReadsCorpusAndReportsBadLines) {
  const std::string file = Fixture("beir/corpus.jsonl");
  const Collected got = ReadAll("beir", Fixture("beir"));  // queries.jsonl beside it is not read
  EXPECT_THAT(Ids(got), ElementsAre("d1", "d2", "42", "d5"));
  EXPECT_EQ(got.docs[0].text, "Zinc and colds\nZinc lozenges shorten colds.");
  EXPECT_THAT(got.docs[0].fields, ElementsAre(Pair("title", "Zinc and colds")));
  EXPECT_EQ(got.docs[0].location, file + ":1");
  EXPECT_EQ(got.docs[1].text, "No title here.");
  EXPECT_THAT(got.docs[1].fields, IsEmpty());
  EXPECT_EQ(got.docs[2].text, "Caf\u00e9\nNumeric id, Latin-1 byte in the title.");
  EXPECT_EQ(got.docs[3].text, "Control\ntab\tand control");
  EXPECT_THAT(got.bad, ElementsAre(file + ":4: not valid JSON", file + ":5: no \"_id\"",
                                   file + ":7: a JSON array, not an object"));
}

TEST(TrecReaderTest, ReadsDocsHeadlinesAndTextSections) {
  const std::string file = Fixture("trec/fr940104.trec");
  const Collected got = ReadAll("trec", file);
  EXPECT_THAT(Ids(got), ElementsAre("FT911-1", "LA010189-0001", "EMPTY-1", "SHORT-2", "WEB-1"));
  EXPECT_EQ(
      got.docs[0].text,
      "FT  14 MAY 91 / Rates & markets\nFirst paragraph of the text.\nSecond-paragraph with AT&T.\n"
      "A second TEXT section.");
  EXPECT_THAT(got.docs[0].fields, ElementsAre(Pair("title", "FT 14 MAY 91 / Rates & markets")));
  EXPECT_EQ(got.docs[1].text, "One-line document.");
  EXPECT_EQ(got.docs[1].location, file + ":13");
  // Several documents on one line, after other text.
  EXPECT_EQ(got.docs[2].text, "");
  EXPECT_EQ(got.docs[2].location, file + ":14");
  EXPECT_EQ(got.docs[3].text, "x");
  // No <TEXT>: the whole document minus DOCNO/DOCHDR, as HTML; the script does not leak.
  EXPECT_EQ(got.docs[4].text, "Web page\nBody <text> here.");
  EXPECT_THAT(got.bad, ElementsAre(file + ":15: document without a <DOCNO>",
                                   file + ":18: <DOC> without </DOC>"));
}

TEST(SmartReaderTest, ReadsTitleAbstractAndStoredSections) {
  const std::string cran = Fixture("smart/cran.all.3");
  const Collected got = ReadAll("smart", Fixture("smart"));  // cran.qry is not read
  EXPECT_THAT(Ids(got), ElementsAre("7", "1", "3"));         // MED.ALL sorts before cran.all.3
  EXPECT_EQ(got.docs[0].text, "correlation between maternal and fetal plasma\nlevels of glucose .");
  EXPECT_EQ(got.docs[1].text,
            "experimental investigation of the aerodynamics of a\nwing in a slipstream .\n"
            "an experimental study of a wing in a propeller slipstream .");
  EXPECT_THAT(
      got.docs[1].fields,
      ElementsAre(
          Pair("title",
               "experimental investigation of the aerodynamics of a wing in a slipstream ."),
          Pair("author", "brenckman,m."), Pair("author", "second,a."),
          Pair("source", "j. ae. scs. 25, 1958, 324.")));
  EXPECT_EQ(got.docs[1].location, cran + ":2");
  EXPECT_EQ(got.docs[2].text, "first abstract part .\nsecond abstract part .");
  EXPECT_THAT(got.bad, ElementsAre(cran + ":1: text before the first .I line",
                                   cran + ":16: \".I\" needs a document number, got \".I x\""));
}

TEST(NplReaderTest, ReadsNumberedBlocks) {
  const std::string file = Fixture("npl/doc-text");
  const Collected got = ReadAll("npl", Fixture("npl"));  // query-text is not read
  EXPECT_THAT(Ids(got), ElementsAre("1", "2"));
  EXPECT_EQ(got.docs[0].text,
            "compact memories have flexible capacities  a digital data storage\nsystem with "
            "capacity up to bits");
  EXPECT_EQ(got.docs[1].location, file + ":6");
  EXPECT_THAT(got.bad,
              ElementsAre(StartsWith(file + ":9: a block must start with its document number"),
                          file + ":12: document 4 does not end with a \"/\" line"));
}

TEST(ReutersReaderTest, ReadsStoriesFieldsAndEntities) {
  const std::string file = Fixture("reuters/reut2-000.sgm");
  const Collected got = ReadAll("reuters", Fixture("reuters"));
  EXPECT_THAT(Ids(got), ElementsAre("1", "2", "3"));
  // &lt; decoded after tags are stripped, the Latin-1 byte 0xFC read as "ü", &#3; gone.
  EXPECT_EQ(got.docs[0].text,
            "BAHIA COCOA REVIEW\nShowers continued <BAHIA> in\nM\u00fcnchen & the zone.\n Reuter");
  EXPECT_THAT(got.docs[0].fields,
              ElementsAre(Pair("title", "BAHIA COCOA REVIEW"), Pair("topic", "cocoa"),
                          Pair("topic", "coffee"), Pair("place", "el-salvador"),
                          Pair("place", "usa"), Pair("date", "26-FEB-1987 15:01:01.79")));
  EXPECT_EQ(got.docs[0].location, file + ":2");
  EXPECT_EQ(got.docs[1].text, "ASSETS OF MONEY MARKET FUNDS ROSE");  // BRIEF: title only
  EXPECT_EQ(got.docs[2].text,
            "FEDERAL RESERVE WEEKLY REPORT\n Net free reserves.....644 vs.....1,337");
  EXPECT_THAT(FieldValues(got.docs[2], "topic"), ElementsAre("money-supply"));
  EXPECT_THAT(got.bad, ElementsAre(file + ":28: <REUTERS> without a NEWID attribute"));
}

TEST(WikiExtractorReaderTest, ReadsArticles) {
  const std::string first = Fixture("wikiextractor/AA/wiki_00");
  const Collected got = ReadAll("wikiextractor", Fixture("wikiextractor"));
  EXPECT_THAT(Ids(got), ElementsAre("12", "25", "39"));
  EXPECT_EQ(got.docs[0].text,
            "Batman & Robin (film)\n\nA film.\nSecond line with a value <1% and x<y and y>z. cite");
  EXPECT_THAT(got.docs[0].fields,
              ElementsAre(Pair("title", "Batman & Robin (film)"),
                          Pair("url", "http://en.wikipedia.org/wiki?curid=12")));
  EXPECT_EQ(got.docs[1].location, first + ":9");
  EXPECT_THAT(got.bad,
              ElementsAre(first + ":6: <doc> without an id attribute",
                          Fixture("wikiextractor/AA/wiki_01") + ":6: <doc> without </doc>"));
}

TEST(EmailReaderTest, ReadsMessagesAndWalksMime) {
  const Collected got = ReadAll("email", Fixture("email"));
  EXPECT_THAT(Ids(got), ElementsAre("plain.eml", "sub/multipart.eml"));
  const Document& plain = got.docs[0];
  EXPECT_EQ(plain.text, "Caf\u00e9 menu\u2714 today\nHello Bob,\nthe caf\u00e9 opens at nine.");
  EXPECT_THAT(FieldValues(plain, "to"), ElementsAre("Bob <b@example.com>, Carol <c@example.com>"));
  EXPECT_THAT(FieldValues(plain, "subject"), ElementsAre("Caf\u00e9 menu\u2714 today"));
  EXPECT_THAT(FieldValues(plain, "return-path"), ElementsAre("<a@example.com>"));
  EXPECT_EQ(plain.location, Fixture("email/plain.eml") + ":1");
  // Plain alternative only (quoted-printable), base64 text, HTML without tags or style, a forwarded
  // message, HTML labelled text/plain; no attachments.
  EXPECT_EQ(
      got.docs[1].text,
      "Multipart test\nSoft line break and an equals sign = here.\nBase64 text part.\n"
      "Only HTML part & entity\nForwarded subject\nForwarded body.\nHTML labelled as plain text");
  EXPECT_THAT(got.bad, ElementsAre(Fixture("email/no-separator.eml") +
                                       ":1: not an e-mail message: no empty line ends the headers",
                                   Fixture("email/not-mail.txt") +
                                       ":1: not an e-mail message: no header lines"));
}

TEST(EmailReaderTest, ReadsNpmSpamAssassinJsonRecords) {
  const Collected got = ReadAll("email", Fixture("email-json"));
  // The .txt copy beside the .json record is the same message and is not read again.
  EXPECT_THAT(Ids(got), ElementsAre("easy-ham-1/00002", "7", "spam-1/00001"));
  EXPECT_EQ(got.docs[0].text, "Hi\nham body");
  EXPECT_EQ(got.docs[2].text, "Win money\nClick here\u00a0now.");
  EXPECT_THAT(FieldValues(got.docs[2], "from"), ElementsAre("spam@example.com"));
  EXPECT_THAT(
      got.bad,
      ElementsAre(StartsWith(Fixture("email-json/all.json") + ":1: 1 of 3 JSON values"),
                  StartsWith(Fixture("email-json/file_list.json") + ":1: 1 of 1 JSON values")));
}

TEST(EmailReaderTest, JsonRecordsWithAnEmptyIdOrGroupAreNamedByTheirPlace) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "email-json-empty-ids";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "records.json");
    out << R"([{"id": "", "text": "Subject: a\n\nfirst"},)"
        << R"( {"id": "", "group": "spam", "text": "Subject: b\n\nsecond"},)"
        << R"( {"id": "9", "group": "", "text": "Subject: c\n\nthird"},)"
        << R"( {"id": 4, "group": "ham", "text": "Subject: d\n\nfourth"}])";
  }
  const Collected got = ReadAll("email", dir.string());
  EXPECT_THAT(Ids(got), ElementsAre("records.json#1", "records.json#2", "9", "ham/4"));
  EXPECT_THAT(got.bad, IsEmpty());
  std::filesystem::remove_all(dir);
}

TEST(LinesReaderTest, OneDocumentPerNonBlankLine) {
  const Collected got = ReadAll("lines", Fixture("lines/queries.txt"));
  EXPECT_THAT(Ids(got), ElementsAre("1", "4", "5"));
  EXPECT_EQ(got.docs[1].text, "third \u00ff line");  // 0xFF read as windows-1252, CR dropped
  EXPECT_EQ(got.docs[2].text, "fourth line");        // last line without newline
  EXPECT_THAT(got.bad, IsEmpty());
}

TEST(DetectDocumentFormatTest, RecognizesEveryFixture) {
  for (const auto& [format, path] :
       std::vector<std::pair<std::string, std::string>>{{"beir", "beir"},
                                                        {"beir", "beir/corpus.jsonl"},
                                                        {"trec", "trec"},
                                                        {"smart", "smart"},
                                                        {"smart", "smart/MED.ALL"},
                                                        {"npl", "npl"},
                                                        {"reuters", "reuters"},
                                                        {"wikiextractor", "wikiextractor"},
                                                        {"email", "email"},
                                                        {"email", "email/plain.eml"},
                                                        {"email", "email-json"},
                                                        {"lines", "lines"},
                                                        {"lines", "walk"}}) {
    absl::StatusOr<DetectedFormat> detected = DetectDocumentFormat(Fixture(path));
    ASSERT_TRUE(detected.ok()) << path << ": " << detected.status();
    EXPECT_EQ(detected->format, format) << path;
    EXPECT_GT(detected->files_recognized, 0u) << path;
    EXPECT_LE(detected->files_recognized, detected->files_sampled) << path;
  }
}

TEST(DetectDocumentFormatTest, RefusesWhatNoFormatRecognizes) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "detect-unknown";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // JSON that is neither BEIR nor e-mail records, and markup that is neither TREC nor
  // WikiExtractor.
  std::ofstream(dir / "a.jsonl") << R"({"id": 1, "body": "text"})"
                                 << "\n";
  std::ofstream(dir / "b.xml") << "<root><item>text</item></root>\n";
  absl::StatusOr<DetectedFormat> detected = DetectDocumentFormat(dir.string());
  ASSERT_FALSE(detected.ok());
  EXPECT_EQ(detected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(detected.status().message()),
              AllOf(HasSubstr("cannot tell the format of"), HasSubstr("give --format (beir,")));
  EXPECT_EQ(DetectDocumentFormat((dir / "absent").string()).status().code(),
            absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// The real collections of ../shared/data (README.md there says where they come from).
class RealDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("TANDEM_DATA_DIR");
    data_dir_ = dir != nullptr ? dir : SourceDir() + "/../shared/data";
    if (!std::filesystem::is_directory(data_dir_)) {
      GTEST_SKIP() << "real data not found at " << data_dir_
                   << "; set TANDEM_DATA_DIR to the shared data folder to run these tests";
    }
  }

  // Reads a collection, checks what holds for every one, and returns it.
  Collected ReadCollection(std::string_view format, std::string_view relative) {
    const std::string path = absl::StrCat(data_dir_, "/", std::string(relative));
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << path << " is missing from the data folder";
      return {};
    }
    Collected got = ReadAll(format, path);
    EXPECT_THAT(got.bad, IsEmpty());
    std::set<std::string> ids;
    for (const Document& doc : got.docs) {
      EXPECT_FALSE(doc.external_id.empty()) << doc.location;
      EXPECT_TRUE(ids.insert(doc.external_id).second) << "duplicate id " << doc.external_id;
      EXPECT_TRUE(IsCleanUtf8(doc.text)) << doc.location;
      for (const auto& [name, value] : doc.fields) EXPECT_TRUE(IsCleanUtf8(value)) << doc.location;
    }
    return got;
  }

  std::string data_dir_;
};

TEST_F(RealDataTest, AutoDetectsEveryCollectionsFormat) {
  for (const auto& [format, relative] :
       std::vector<std::pair<std::string, std::string>>{{"beir", "beir-scifact"},
                                                        {"smart", "classic/cranfield"},
                                                        {"smart", "classic/cisi"},
                                                        {"smart", "classic/med"},
                                                        {"npl", "classic/npl"},
                                                        {"reuters", "text/reuters21578"},
                                                        {"wikiextractor", "text/wikipedia"}}) {
    const std::string path = absl::StrCat(data_dir_, "/", relative);
    absl::StatusOr<DetectedFormat> detected = DetectDocumentFormat(path);
    ASSERT_TRUE(detected.ok()) << relative << ": " << detected.status();
    EXPECT_EQ(detected->format, format) << relative;
  }
}

TEST_F(RealDataTest, SciFact) {
  const Collected got = ReadCollection("beir", "beir-scifact");
  EXPECT_EQ(got.docs.size(), 5183u);
}

TEST_F(RealDataTest, Cranfield) {
  const Collected got = ReadCollection("smart", "classic/cranfield");
  ASSERT_EQ(got.docs.size(), 1400u);
  EXPECT_EQ(got.docs.back().external_id, "1400");
  // Document 576 has two .W sections; the second one is kept.
  EXPECT_THAT(got.docs[575].text, HasSubstr("blades is included ."));
}

TEST_F(RealDataTest, Cisi) {
  EXPECT_EQ(ReadCollection("smart", "classic/cisi").docs.size(), 1460u);
}

TEST_F(RealDataTest, Medline) {
  EXPECT_EQ(ReadCollection("smart", "classic/med").docs.size(), 1033u);
}

// The collection is known as 11,429 documents, but this doc-text holds 11,426 blocks: numbers 6984,
// 8139 and 8143 are absent (and no relevance judgment names them).
TEST_F(RealDataTest, Npl) {
  const Collected got = ReadCollection("npl", "classic/npl");
  EXPECT_EQ(got.docs.size(), 11426u);
  EXPECT_EQ(got.docs.back().external_id, "11429");
}

TEST_F(RealDataTest, Reuters21578) {
  const Collected got = ReadCollection("reuters", "text/reuters21578");
  ASSERT_EQ(got.docs.size(), 21578u);
  const auto story = std::find_if(got.docs.begin(), got.docs.end(),
                                  [](const Document& doc) { return doc.external_id == "17980"; });
  ASSERT_NE(story, got.docs.end());
  EXPECT_THAT(story->text, HasSubstr("growth.\u00fc"));  // the collection's one stray byte, 0xFC
}

// README.md says "about 7,700 articles"; the 100 files hold 6,514 <doc> elements.
TEST_F(RealDataTest, Wikipedia) {
  const Collected got = ReadCollection("wikiextractor", "text/wikipedia");
  ASSERT_EQ(got.docs.size(), 6514u);
  EXPECT_EQ(got.docs.front().external_id, "12");
  EXPECT_THAT(got.docs.front().text, StartsWith("Anarchism\n"));
  for (const Document& doc : got.docs) EXPECT_THAT(doc.text, ::testing::Not(HasSubstr("<br")));
}

}  // namespace
}  // namespace tandem::index_builder
