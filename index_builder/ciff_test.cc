// CIFF import and export: round trips through CIFF keep every list, id and length, and every kind
// of bad file fails with a message naming the record (ciff_reader.h).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ciff/common_index_file_format.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index_builder/ciff_import.h"
#include "index_builder/ciff_reader.h"
#include "index_builder/index_export.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

namespace ciff = io::anserini::index::proto;
using ::testing::HasSubstr;

// A message with its varint length prefix.
std::string Delimited(const google::protobuf::Message& m) {
  std::string out;
  uint8_t prefix[5];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
      static_cast<uint32_t>(m.ByteSizeLong()), prefix);
  out.append(reinterpret_cast<const char*>(prefix), end - prefix);
  return out + m.SerializeAsString();
}

ciff::Header Header(int lists, int docs) {
  ciff::Header h;
  h.set_version(1);
  h.set_num_postings_lists(lists);
  h.set_num_docs(docs);
  h.set_total_postings_lists(lists);
  h.set_total_docs(docs);
  return h;
}

// A list from (d-gap, tf) pairs, df and cf as they should be.
ciff::PostingsList List(const std::string& term, std::vector<std::pair<int, int>> postings) {
  ciff::PostingsList l;
  l.set_term(term);
  l.set_df(static_cast<int64_t>(postings.size()));
  int64_t cf = 0;
  for (auto [gap, tf] : postings) {
    ciff::Posting* p = l.add_postings();
    p->set_docid(gap);
    p->set_tf(tf);
    cf += tf;
  }
  l.set_cf(cf);
  return l;
}

ciff::DocRecord Doc(int docid, const std::string& id, int length) {
  ciff::DocRecord d;
  d.set_docid(docid);
  d.set_collection_docid(id);
  d.set_doclength(length);
  return d;
}

// A valid file: 3 documents, lists "apple" and "protein".
struct Parts {
  ciff::Header header = Header(2, 3);
  std::vector<ciff::PostingsList> lists = {List("apple", {{0, 1}, {2, 3}}),
                                           List("protein", {{1, 2}, {1, 1}})};
  std::vector<ciff::DocRecord> docs = {Doc(0, "d0", 1), Doc(1, "d1", 2), Doc(2, "d2", 4)};

  std::string Bytes() const {
    std::string out = Delimited(header);
    for (const auto& l : lists) out += Delimited(l);
    for (const auto& d : docs) out += Delimited(d);
    return out;
  }
};

class CiffTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& bytes) {
    const std::string path = absl::StrCat(tmp_.path(), "/in", files_++, ".ciff");
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // Imports `bytes`; expects INVALID_ARGUMENT with `message` and no index written.
  void ExpectBad(const std::string& bytes, const std::string& message) {
    const std::string out = tmp_.path() + "/bad-index";
    absl::StatusOr<CiffImportSummary> s = ImportCiff(Write(bytes), out, {});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message));
    EXPECT_FALSE(std::filesystem::exists(out));
  }

  testing::TempDir tmp_;
  int files_ = 0;
};

testing::DecodedLists Lists(const index::Index& idx) {
  auto lists = testing::DecodeAllLists(idx);
  EXPECT_TRUE(lists.ok()) << lists.status();
  return lists.ok() ? *lists : testing::DecodedLists();
}

TEST_F(CiffTest, ExportThenImportGivesTheSameIndex) {
  testing::CollectionSpec spec;
  spec.num_docs = 1500;  // lists of several blocks; documents of length 0 too
  const std::string original = tmp_.path() + "/original";
  ASSERT_TRUE(testing::BuildIndex(testing::RandomDocuments(spec), original, "pfor").ok());
  auto want = index::Index::Open(original);
  ASSERT_TRUE(want.ok());
  const std::string file = tmp_.path() + "/index.ciff";
  ASSERT_TRUE(ExportCiff(**want, file).ok());

  for (const std::string codec : {"pfor", "rice"}) {
    const std::string copy = tmp_.path() + "/copy-" + codec;
    index::IndexWriterOptions options;
    options.codec = codec;
    absl::StatusOr<CiffImportSummary> s = ImportCiff(file, copy, options);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_FALSE(s->terms_reordered);
    auto got = index::Index::Open(copy, {.verify_lists = true});
    ASSERT_TRUE(got.ok()) << got.status();
    const index::IndexStats& a = (*want)->stats();
    const index::IndexStats& b = (*got)->stats();
    EXPECT_EQ(b.num_docs, a.num_docs);
    EXPECT_EQ(b.num_terms, a.num_terms);
    EXPECT_EQ(b.num_postings, a.num_postings);
    EXPECT_EQ(b.total_doc_length, a.total_doc_length);
    EXPECT_EQ(b.avg_doc_length, a.avg_doc_length);
    EXPECT_EQ(s->documents, a.num_docs);
    EXPECT_EQ(s->postings, a.num_postings);
    EXPECT_EQ(Lists(**got), Lists(**want));
    for (uint32_t d = 0; d < a.num_docs; ++d) {
      ASSERT_EQ((*got)->external_id(d), (*want)->external_id(d));
      ASSERT_EQ((*got)->doc_length(d), (*want)->doc_length(d));
    }
    for (uint64_t t = 0; t < a.num_terms; ++t) {
      EXPECT_EQ((*got)->term_at(t).cf, (*want)->term_at(t).cf);
    }
    EXPECT_EQ((*got)->manifest().source_format, "ciff");
    EXPECT_EQ((*got)->manifest().source_input, file);
    EXPECT_EQ((*got)->manifest().codec, codec);

    // Exported again, the file is the same but for the header's description.
    const std::string again = tmp_.path() + "/again-" + codec + ".ciff";
    ASSERT_TRUE(ExportCiff(**got, again).ok());
    auto first = CiffReader::Open(file);
    auto second = CiffReader::Open(again);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ((*second)->file_bytes() - (*second)->offset(),
              (*first)->file_bytes() - (*first)->offset());
  }
}

TEST_F(CiffTest, TheHeaderDescribesTheExportedIndex) {
  const std::string dir = tmp_.path() + "/idx";
  ASSERT_TRUE(testing::BuildIndex({{"a", "b", "a"}, {"b"}, {}}, dir, "pfor").ok());
  auto idx = index::Index::Open(dir);
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(ExportCiff(**idx, tmp_.path() + "/x.ciff").ok());
  auto reader = CiffReader::Open(tmp_.path() + "/x.ciff");
  ASSERT_TRUE(reader.ok()) << reader.status();
  const ciff::Header& h = (*reader)->header();
  EXPECT_EQ(h.version(), 1);
  EXPECT_EQ(h.num_postings_lists(), 2);
  EXPECT_EQ(h.num_docs(), 3);
  EXPECT_EQ(h.total_terms_in_collection(), 4);
  EXPECT_DOUBLE_EQ(h.average_doclength(), 4.0f / 3);
  CiffPostingsList list;
  ASSERT_TRUE((*reader)->NextPostingsList(&list).ok());
  EXPECT_EQ(list.term, "a");
  EXPECT_EQ(list.docids, std::vector<uint32_t>({0}));
  EXPECT_EQ(list.freqs, std::vector<uint32_t>({2}));
  ASSERT_TRUE((*reader)->NextPostingsList(&list).ok());
  EXPECT_EQ(list.docids, std::vector<uint32_t>({0, 1}));
  CiffDocRecord doc;
  for (uint32_t d = 0; d < 3; ++d) {
    ASSERT_TRUE((*reader)->NextDocRecord(&doc).ok());
    EXPECT_EQ(doc.collection_docid, absl::StrCat("doc", d));
  }
  EXPECT_EQ(doc.length, 0u);
  EXPECT_TRUE((*reader)->Finish().ok());
}

TEST_F(CiffTest, ListsInAnotherTermOrderAreImportedInTheLexiconsOrder) {
  Parts p;
  p.header = Header(3, 3);
  p.lists = {List("zebra", {{2, 1}}), List("apple", {{0, 1}, {2, 3}}),
             List("protein", {{1, 2}, {1, 1}})};
  const std::string out = tmp_.path() + "/idx";
  absl::StatusOr<CiffImportSummary> s = ImportCiff(Write(p.Bytes()), out, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->terms_reordered);
  auto idx = index::Index::Open(out, {.verify_lists = true});
  ASSERT_TRUE(idx.ok());
  testing::DecodedLists want = {
      {"apple", {{0, 2}, {1, 3}}}, {"protein", {{1, 2}, {2, 1}}}, {"zebra", {{2}, {1}}}};
  EXPECT_EQ(Lists(**idx), want);
  EXPECT_EQ((*idx)->term_at(0).term, "apple");
  EXPECT_EQ((*idx)->external_id(2), "d2");
  EXPECT_EQ((*idx)->doc_length(2), 4u);
  EXPECT_FLOAT_EQ((*idx)->avg_doc_length(), 7.0f / 3);
}

TEST_F(CiffTest, BadPostingsNameTheListAndThePosting) {
  Parts p;
  p.lists[1] = List("protein", {{1, 1}, {0, 1}});
  ExpectBad(
      p.Bytes(),
      "ciff: postings list 1 (term 'protein'): posting 1 has d-gap 0; postings must increase");
  p.lists[1] = List("protein", {{2, 1}, {-1, 1}});
  ExpectBad(p.Bytes(), "postings list 1 (term 'protein'): posting 1 has d-gap -1");
  p.lists[1] = List("protein", {{-1, 1}});
  ExpectBad(p.Bytes(), "postings list 1 (term 'protein'): posting 0 has docid -1");
  p.lists[1] = List("protein", {{1, 1}, {2, 1}});
  ExpectBad(p.Bytes(),
            "postings list 1 (term 'protein'): posting 1 has docid 3, not below the header's "
            "num_docs 3");
  p.lists[1] = List("protein", {{1, 1}, {1, 0}});
  ExpectBad(p.Bytes(), "postings list 1 (term 'protein'): posting 1 (docid 2) has tf 0");
  p.lists[1] = List("protein", {{1, 1}});
  p.lists[1].set_df(2);
  ExpectBad(p.Bytes(), "postings list 1 (term 'protein'): df 2, but it holds 1 postings");
  p.lists[1] = List("protein", {{1, 1}});
  p.lists[1].set_cf(7);
  ExpectBad(p.Bytes(), "postings list 1 (term 'protein'): cf 7, but its postings' tfs sum to 1");
  p.lists[1] = List("protein", {});
  ExpectBad(p.Bytes(), "postings list 1 (term 'protein') has no postings");
  p.lists[1] = List("", {{1, 1}});
  ExpectBad(p.Bytes(), "postings list 1 has an empty term");
  p.lists[1] = List("apple", {{1, 1}});
  ExpectBad(p.Bytes(), "postings lists 0 and 1 both have term 'apple'");
}

TEST_F(CiffTest, BadDocRecordsAreNamed) {
  Parts p;
  p.docs[1] = Doc(2, "d1", 2);
  ExpectBad(p.Bytes(), "doc record 1 has docid 2; doc records must come in docid order 0..2");
  p = Parts();
  p.docs[2] = Doc(2, "", 2);
  ExpectBad(p.Bytes(), "doc record 2 has no collection_docid");
  p = Parts();
  p.docs[2] = Doc(2, "d2", -4);
  ExpectBad(p.Bytes(), "doc record 2 ('d2') has doclength -4");
  p = Parts();
  p.header = Header(2, 0);
  p.docs.clear();
  p.lists.clear();
  p.header = Header(0, 0);
  ExpectBad(p.Bytes(), "the header counts no doc records");
}

TEST_F(CiffTest, CountsThatDisagreeWithTheHeaderAreRefused) {
  Parts p;
  p.header = Header(1, 3);  // one list fewer than the file holds: list 1 read as doc record 0
  ExpectBad(p.Bytes(), "doc record 0: the message at byte");
  p.header = Header(3, 3);  // one list more: doc record 0 read as list 2
  ExpectBad(p.Bytes(), "postings list 2: the message at byte");
  p.header = Header(2, 2);  // a doc record more than the header counts
  ExpectBad(p.Bytes(), "bytes follow the last of the header's 2 postings lists and 2 doc records");
  p.header = Header(2, 4);  // one fewer
  ExpectBad(p.Bytes(), "doc record 3: the file ends at byte");
  p.header = Header(-1, 3);
  ExpectBad(p.Bytes(), "header: num_postings_lists -1 and num_docs 3 must not be negative");
  p.header = Header(2, 3);
  p.header.set_version(2);
  ExpectBad(p.Bytes(), "header: version 2; this reader knows CIFF version 1");
}

TEST_F(CiffTest, DamagedBytesAreNamed) {
  const std::string good = Parts().Bytes();
  ExpectBad("", "ciff: header: the file ends at byte 0, before it");
  // Cut inside the last doc record.
  ExpectBad(good.substr(0, good.size() - 1), "doc record 2: its length prefix at byte");
  // A varint that never ends, where list 0's length should be.
  const std::string header = Delimited(Parts().header);
  ExpectBad(header + std::string(11, '\xff'), "postings list 0: no length prefix at byte");
  // A length prefix past the end.
  ExpectBad(header + "\x7f" + "abc", "postings list 0: its length prefix at byte " +
                                         std::to_string(header.size()) +
                                         " says 127 bytes, past the end of the file (3 left)");
  // Bytes that are no message: field 1 as a length of 100 bytes, inside a 2-byte message.
  ExpectBad(header + std::string("\x02\x0a\x64", 3), "postings list 0: the 2 bytes at byte");
  // The same list parsed in full (its second reading) rejects what the first pass let through.
  Parts p;
  p.lists[0].mutable_postings(0)->set_tf(0);
  ExpectBad(p.Bytes(), "postings list 0 (term 'apple'): posting 0 (docid 0) has tf 0");
}

TEST_F(CiffTest, EveryTruncationIsAnError) {
  const std::string good = Parts().Bytes();
  for (size_t n = 0; n < good.size(); ++n) {
    auto reader = CiffReader::Open(Write(good.substr(0, n)));
    absl::Status s = reader.status();
    if (s.ok()) {
      CiffPostingsList list;
      for (uint32_t i = 0; s.ok() && i < (*reader)->num_postings_lists(); ++i) {
        s = (*reader)->NextPostingsList(&list);
      }
      CiffDocRecord doc;
      for (uint32_t i = 0; s.ok() && i < (*reader)->num_docs(); ++i) {
        s = (*reader)->NextDocRecord(&doc);
      }
      if (s.ok()) s = (*reader)->Finish();
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << n << ": " << s;
    EXPECT_THAT(std::string(s.message()), ::testing::StartsWith("ciff: ")) << n;
  }
}

TEST_F(CiffTest, AMissingFileIsNotFound) {
  absl::StatusOr<CiffImportSummary> s =
      ImportCiff(tmp_.path() + "/none.ciff", tmp_.path() + "/x", {});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tandem::index_builder
