// Tests of parallel parsing (ReaderOptions::threads > 1): on every fixture format, on generated
// files cut into many chunks (with bad documents, CRLF lines, a byte-order mark) and on the real
// collections of ../shared/data, the documents, their locations and the bad-document reports come
// in exactly the order and form of a one-thread reader; an error in one file stops reading at that
// file's turn with the single reader's message.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index_builder/document_reader.h"
#include "tests/data_dir.h"

namespace tandem::index_builder {
namespace {

std::string Fixture(std::string_view relative) {
  const char* dir = std::getenv("TANDEM_SOURCE_DIR");
  return absl::StrCat(dir != nullptr ? dir : ".", "/tests/data/readers/", std::string(relative));
}

// Everything a reader says, in order: each document in full (attributes too), each bad-document
// report, and how reading ended.
std::vector<std::string> Transcript(std::string_view format, const std::string& path, int threads,
                                    uint64_t chunk_bytes = 256 << 10,
                                    uint64_t max_bytes_in_flight = 64 << 20,
                                    size_t stop_after = SIZE_MAX) {
  std::vector<std::string> out;
  ReaderOptions options;
  options.threads = threads;
  options.chunk_bytes = chunk_bytes;
  options.max_bytes_in_flight = max_bytes_in_flight;
  options.on_bad_document = [&out](const absl::Status& s) {
    out.push_back(absl::StrCat("bad ", s.ToString()));
  };
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader(format, path, options);
  if (!reader.ok()) return {absl::StrCat("open ", reader.status().ToString())};
  Document doc;
  for (size_t n = 0; n < stop_after; ++n) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    if (!more.ok()) {
      out.push_back(absl::StrCat("error ", more.status().ToString()));
      return out;
    }
    if (!*more) {
      out.push_back("end");
      const ReadProgress progress = (*reader)->Progress();
      EXPECT_EQ(progress.bytes_read, progress.bytes_total) << path;
      return out;
    }
    std::string fields;
    for (const auto& [name, value] : doc.fields) absl::StrAppend(&fields, name, "=", value, ";");
    std::string attributes;
    for (const auto& [name, value] : doc.attributes) {
      absl::StrAppend(&attributes, name, "=", value, ";");
    }
    out.push_back(absl::StrCat("doc ", doc.external_id, " @", doc.location, " [", fields, "] {",
                               attributes, "} ", doc.text));
  }
  return out;
}

// Parallel transcripts for several thread counts, chunk sizes and look-ahead bounds, each checked
// against the one-thread transcript.
void ExpectSameAsOneThread(std::string_view format, const std::string& path) {
  const std::vector<std::string> want = Transcript(format, path, 1);
  ASSERT_GT(want.size(), 1u) << path;
  ASSERT_FALSE(want.front().starts_with("open ")) << want.front();
  for (int threads : {2, 5}) {
    for (uint64_t chunk : {uint64_t{1}, uint64_t{200}, uint64_t{256} << 10}) {
      for (uint64_t in_flight : {uint64_t{1}, uint64_t{64} << 20}) {
        EXPECT_EQ(Transcript(format, path, threads, chunk, in_flight), want)
            << format << " " << path << " threads " << threads << " chunk " << chunk
            << " in flight " << in_flight;
      }
    }
  }
}

TEST(ParallelReaderTest, EveryFixtureReadsAsWithOneThread) {
  for (const auto& [format, path] : std::vector<std::pair<std::string, std::string>>{
           {"beir", "beir"},
           {"beir", "beir/corpus.jsonl"},
           {"trec", "trec"},
           {"reuters", "reuters"},
           {"wikiextractor", "wikiextractor"},
           {"email", "email"},
           {"email", "email-json"},
           {"smart", "smart"},
           {"npl", "npl"},
           {"lines", "lines"},
           {"lines", "walk"},
       }) {
    ExpectSameAsOneThread(format, Fixture(path));
  }
  // Transcripts hold the attributes, so those above were compared too.
  EXPECT_THAT(Transcript("email", Fixture("email-json"), 3),
              ::testing::Contains(::testing::HasSubstr("label=spam;attachment=no;}")));
  EXPECT_THAT(Transcript("reuters", Fixture("reuters"), 3),
              ::testing::Contains(::testing::HasSubstr("{lewissplit=train;topics=cocoa;")));
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ParallelReaderTest, LargeFilesCutIntoChunksKeepDocumentsReportsAndLines) {
  base::TempDir tmp;
  std::string jsonl = "\xEF\xBB\xBF";
  std::string wiki, trec, lines;
  for (int i = 0; i < 600; ++i) {
    const std::string eol = i % 7 == 0 ? "\r\n" : "\n";
    if (i % 50 == 3) {
      absl::StrAppend(&jsonl, "{\"title\": \"no id\"}", eol);
    } else if (i % 50 == 4) {
      absl::StrAppend(&jsonl, "{not json", eol);
    } else {
      absl::StrAppend(&jsonl, "{\"_id\": \"d", i, "\", \"title\": \"T", i, "\", \"text\": \"word",
                      i % 13, " caf\xE9 x\", \"year\": ", 1990 + i % 30, "}", eol);
    }
    if (i % 11 == 0) jsonl += eol;  // blank lines are skipped, not reported

    absl::StrAppend(&wiki, "<doc id=\"", i % 40 == 5 ? "" : absl::StrCat(i),
                    "\" url=\"u\" title=\"T", i, "\">", eol, "Title ", i, eol, "body &amp; <br> ",
                    i % 17, eol);
    if (i % 90 != 9) absl::StrAppend(&wiki, "</doc>", eol);  // unclosed: runs into the next

    absl::StrAppend(&trec, "<DOC>", eol);
    if (i % 30 != 7) absl::StrAppend(&trec, "<DOCNO> FR-", i, " </DOCNO>", eol);
    absl::StrAppend(&trec, "<DATE> 9", i % 12, " </DATE>", eol);
    absl::StrAppend(&trec, "<TEXT>", eol, "text ", i % 19, " and more", eol, "</TEXT>", eol);
    if (i % 80 != 11) absl::StrAppend(&trec, "</DOC>", eol);
    absl::StrAppend(&trec, eol);

    absl::StrAppend(&lines, i % 9 == 0 ? "  " : absl::StrCat("line ", i), eol);
  }
  Write(tmp.path() + "/corpus.jsonl", jsonl);
  Write(tmp.path() + "/wiki_00", wiki);
  Write(tmp.path() + "/big.trec", trec);
  Write(tmp.path() + "/lines.txt", lines);
  ExpectSameAsOneThread("beir", tmp.path() + "/corpus.jsonl");
  ExpectSameAsOneThread("wikiextractor", tmp.path() + "/wiki_00");
  ExpectSameAsOneThread("trec", tmp.path() + "/big.trec");
  ExpectSameAsOneThread("lines", tmp.path() + "/lines.txt");
  // Attributes come through the parsing threads with their documents.
  EXPECT_THAT(Transcript("beir", tmp.path() + "/corpus.jsonl", 3, 64),
              ::testing::Contains(::testing::HasSubstr(" {year=1995;} ")));
  EXPECT_THAT(Transcript("trec", tmp.path() + "/big.trec", 3, 64),
              ::testing::Contains(::testing::HasSubstr(" {date=97;} ")));
  // The generated files do have bad documents, reported with their lines.
  const std::vector<std::string> trec_transcript =
      Transcript("trec", tmp.path() + "/big.trec", 3, 64);
  EXPECT_THAT(trec_transcript, ::testing::Contains(::testing::HasSubstr("big.trec:")));
  EXPECT_THAT(Transcript("beir", tmp.path() + "/corpus.jsonl", 3, 64),
              ::testing::Contains(::testing::HasSubstr("corpus.jsonl:6: not valid JSON")));
}

// The listing's line scanner reads through a 1 MiB buffer: lines longer than it, a line that ends
// at the buffer's edge, and a last line without a newline are cut and counted as one reader reads
// them.
TEST(ParallelReaderTest, LongLinesAndALastLineWithoutNewlineKeepTheirPlaces) {
  base::TempDir tmp;
  std::string lines, wiki;
  for (int i = 0; i < 40; ++i) {
    const size_t length = i % 10 == 3 ? (3 << 20) + i : (i % 10 == 6 ? (1 << 20) - 1 : 100 + i);
    absl::StrAppend(&lines, "line", i, " ", std::string(length, static_cast<char>('a' + i % 26)),
                    i % 4 == 0 ? "\r\n" : "\n");
    absl::StrAppend(&wiki, "<doc id=\"", i, "\" url=\"u\" title=\"T", i, "\">\nTitle ", i, "\n",
                    std::string(length / 8, 'w'), " end", i, "\n</doc>\n");
  }
  lines += "last line, no newline";
  wiki += "<doc id=\"last\" url=\"u\" title=\"L\">\nLast\nno newline";
  Write(tmp.path() + "/long.txt", lines);
  Write(tmp.path() + "/wiki_00", wiki);
  ExpectSameAsOneThread("lines", tmp.path() + "/long.txt");
  ExpectSameAsOneThread("wikiextractor", tmp.path() + "/wiki_00");
}

TEST(ParallelReaderTest, AFileThatCannotBeReadStopsReadingAtItsTurn) {
  base::TempDir tmp;
  for (int f = 0; f < 6; ++f) {
    std::string text;
    for (int i = 0; i < 50; ++i) absl::StrAppend(&text, "file ", f, " line ", i, "\n");
    Write(absl::StrCat(tmp.path(), "/f", f, ".txt"), text);
  }
  // Listed when the reader opens, gone when its turn comes.
  auto read_without_f3 = [&](int threads) {
    std::vector<std::string> out;
    ReaderOptions options;
    options.threads = threads;
    options.chunk_bytes = 100;
    absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
        OpenDocumentReader("lines", tmp.path(), options);
    EXPECT_TRUE(reader.ok());
    std::filesystem::rename(tmp.path() + "/f3.txt", tmp.path() + "/gone");
    Document doc;
    while (true) {
      absl::StatusOr<bool> more = (*reader)->Next(&doc);
      if (!more.ok()) {
        out.push_back(more.status().ToString());
        break;
      }
      if (!*more) break;
      out.push_back(doc.external_id);
    }
    std::filesystem::rename(tmp.path() + "/gone", tmp.path() + "/f3.txt");
    return out;
  };
  const std::vector<std::string> want = read_without_f3(1);
  ASSERT_EQ(want.size(), 151u);
  EXPECT_THAT(want.back(), ::testing::HasSubstr("cannot open"));
  EXPECT_EQ(read_without_f3(2), want);
  EXPECT_EQ(read_without_f3(5), want);
}

TEST(ParallelReaderTest, StoppingEarlyEndsTheParsers) {
  const std::vector<std::string> two =
      Transcript("trec", Fixture("trec"), 4, 1, 64 << 20, /*stop_after=*/2);
  EXPECT_EQ(two.size(), Transcript("trec", Fixture("trec"), 1, 1, 64 << 20, 2).size());
}

TEST(ParallelReaderTest, RealCollectionsReadAsWithOneThread) {
  for (const auto& [format, relative] : std::vector<std::pair<std::string, std::string>>{
           {"wikiextractor", "text/wikipedia"}, {"reuters", "text/reuters21578"}}) {
    const std::string path = testing::DataFile(relative);
    if (path.empty()) continue;
    const std::vector<std::string> want = Transcript(format, path, 1);
    EXPECT_GT(want.size(), 1000u);
    EXPECT_EQ(Transcript(format, path, 4, 64 << 10), want) << path;
    EXPECT_EQ(Transcript(format, path, 3, 1 << 20, 4 << 20), want) << path;
  }
}

}  // namespace
}  // namespace tandem::index_builder
