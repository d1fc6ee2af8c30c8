// PostingListView::DecodeDocids bounds every docID it decodes: a list whose file checksum is right
// but whose skip entries or gaps are wrong (a buggy writer, a hostile file) gives DATA_LOSS, never
// a docID out of order or beyond the list's end. Lists of one block take the compact form, longer
// ones the full form; both decode to what was encoded, with every codec.
#include "index/posting_list.h"

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/varint.h"

namespace tandem::index {
namespace {

ListMetadata Meta(const std::vector<uint32_t>& freqs, float max_score) {
  uint64_t cf = 0;
  for (uint32_t f : freqs) cf += f;
  return {.num_postings = static_cast<uint32_t>(freqs.size()), .cf = cf, .max_score = max_score};
}

// 400 postings (four blocks), docIDs 0, 3, 6, ...; the view over a copy the test may damage.
struct List {
  std::string bytes;
  std::vector<uint32_t> docids;
  std::vector<uint32_t> freqs;
  float max_score = 0.0f;

  List() {
    for (uint32_t i = 0; i < 400; ++i) {
      docids.push_back(3 * i);
      freqs.push_back(1 + i % 3);
    }
    const std::vector<float> norms(3 * 400, 1.0f);
    max_score =
        *EncodePostingList(*GetBlockCodec("pfor"), docids, freqs, norms.data(), 1.0f, &bytes);
  }
  PostingListView View() const {
    return *PostingListView::Parse(*GetBlockCodec("pfor"), bytes, Meta(freqs, max_score));
  }
  // The last docID of `block` in the skip table (its first array, after the 4-byte header).
  uint32_t LastDocid(uint32_t block) const {
    uint32_t v;
    std::memcpy(&v, bytes.data() + kFullListHeaderBytes + 4 * block, 4);
    return v;
  }
  void SetLastDocid(uint32_t block, uint32_t v) {
    std::memcpy(bytes.data() + kFullListHeaderBytes + 4 * block, &v, 4);
  }
};

TEST(PostingListDecodeTest, IntactListsDecodeEveryBlock) {
  List list;
  const PostingListView view = list.View();
  ASSERT_EQ(view.num_blocks(), 4u);
  ASSERT_FALSE(view.compact());
  uint32_t out[kBlockSize];
  for (uint32_t b = 0; b < view.num_blocks(); ++b) {
    ASSERT_TRUE(view.DecodeDocids(*GetBlockCodec("pfor"), b, out).ok()) << b;
    EXPECT_EQ(out[0], list.docids[b * kBlockSize]);  // docID 0 opens the list: a gap of 0
  }
  EXPECT_TRUE(view.Verify(*GetBlockCodec("pfor"), 1200).ok());
  // Header, then the four arrays of the skip table: last docIDs, block maxima, block ends (4
  // bytes each) and docID-section sizes (2 bytes each, padded to 4), then the blocks.
  EXPECT_EQ(SkipTableBytes(4, false), 4u * 12 + 8);
  EXPECT_EQ(view.data() - reinterpret_cast<const uint8_t*>(list.bytes.data()),
            static_cast<ptrdiff_t>(kFullListHeaderBytes + SkipTableBytes(4, false)));
  EXPECT_EQ(view.block_end(3), view.data_bytes());
  for (uint32_t b = 0; b < 4; ++b) {
    EXPECT_EQ(view.last_docid(b), list.docids[std::min(128 * b + 127, 399u)]);
  }
}

// A docID section of 64 KiB or more does not fit the skip table's u16 sizes: the list takes the
// wide form (u32 sizes, flagged in its header) and reads the same. Rice's parameter follows the
// mean gap, so one gap far beyond it is a long unary run: 600,000 gaps of 1 and one of 590,000
// give the parameter 0 and one block a docID section of 590,000 bits.
TEST(PostingListDecodeTest, DocSectionsOf64KiBOrMoreTakeTheWideForm) {
  const BlockCodec& rice = *GetBlockCodec("rice");
  std::vector<uint32_t> docids(600'000), freqs(600'001, 1);
  std::iota(docids.begin(), docids.end(), 0u);
  docids.push_back(docids.back() + 590'000);
  const std::vector<float> norms(docids.back() + 1, 1.0f);
  std::string bytes;
  const absl::StatusOr<float> max_score =
      EncodePostingList(rice, docids, freqs, norms.data(), 1.0f, &bytes);
  ASSERT_TRUE(max_score.ok()) << max_score.status();
  uint16_t flags;
  std::memcpy(&flags, bytes.data() + 2, 2);
  ASSERT_EQ(flags, kWideDocSections);
  const uint32_t num_blocks = (600'001 + 127) / 128;
  absl::StatusOr<PostingListView> view =
      PostingListView::Parse(rice, bytes, Meta(freqs, *max_score));
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->data() - reinterpret_cast<const uint8_t*>(bytes.data()),
            static_cast<ptrdiff_t>(kFullListHeaderBytes + SkipTableBytes(num_blocks, true)));
  EXPECT_GE(view->block_end(num_blocks - 1) - view->block_begin(num_blocks - 1), 65536u);
  ASSERT_TRUE(view->Verify(rice, docids.back() + 1).ok()) << view->Verify(rice, docids.back() + 1);
  uint32_t out[kBlockSize];
  ASSERT_TRUE(view->DecodeDocids(rice, num_blocks - 1, out).ok());
  EXPECT_EQ(out[view->block_postings(num_blocks - 1) - 1], docids.back());
  // The same bytes read with the u16 sizes are refused, not misread.
  bytes[2] = 0;
  absl::StatusOr<PostingListView> narrow =
      PostingListView::Parse(rice, bytes, Meta(freqs, *max_score));
  EXPECT_TRUE(!narrow.ok() || !narrow->Verify(rice, docids.back() + 1).ok());
}

TEST(PostingListDecodeTest, SkipEntriesThatDisagreeWithTheGapsAreDataLoss) {
  uint32_t out[kBlockSize];
  const BlockCodec& pfor = *GetBlockCodec("pfor");
  {
    List list;  // block 1 claims to end later than its gaps say
    list.SetLastDocid(1, list.LastDocid(1) + 1);
    EXPECT_EQ(list.View().DecodeDocids(pfor, 1, out).code(), absl::StatusCode::kDataLoss);
  }
  {
    List list;  // block 2 claims to end beyond the list's last docID
    list.SetLastDocid(2, 0xfffffff0u);
    EXPECT_EQ(list.View().DecodeDocids(pfor, 2, out).code(), absl::StatusCode::kDataLoss);
    // Block 3 starts from that base: its gaps would wrap past 2^32.
    EXPECT_EQ(list.View().DecodeDocids(pfor, 3, out).code(), absl::StatusCode::kDataLoss);
  }
  {
    List list;  // block 1's base moved back: its docIDs would repeat block 0's
    list.SetLastDocid(0, list.LastDocid(0) - 30);
    const absl::Status s = list.View().DecodeDocids(pfor, 1, out);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
  {
    List list;  // a header flag that does not exist
    list.bytes[2] = 2;
    EXPECT_FALSE(PostingListView::Parse(pfor, list.bytes, Meta(list.freqs, 1.0f)).ok());
  }
  {
    List list;  // a cf that the frequencies do not sum to
    ListMetadata meta = Meta(list.freqs, list.max_score);
    meta.cf += 1;
    EXPECT_EQ(PostingListView::Parse(pfor, list.bytes, meta)->Verify(pfor, 1200).code(),
              absl::StatusCode::kDataLoss);
  }
}

// A frequency section holding 2^32 - 1 (a frequency of 2^32) is DATA_LOSS, not a frequency that
// wrapped to 0: DecodeFreqs promises frequencies of at least 1. The frequencies are added to four
// at a time and the rest one by one, so the value is tried at every place of a block of 11.
TEST(PostingListDecodeTest, FrequencyBeyond32BitsIsDataLoss) {
  const BlockCodec& pfor = *GetBlockCodec("pfor");
  constexpr uint32_t kN = 11;
  for (uint32_t at = 0; at <= kN; ++at) {  // kN: no frequency beyond 32 bits
    // A compact list of docIDs 5, 10, ..., 55: last docID, docID-section bytes, the gaps,
    // the frequencies minus one.
    std::string docs;
    const std::vector<uint32_t> gaps(kN - 1, 5);
    pfor.Encode(gaps.data(), gaps.size(), 0, &docs);
    std::string bytes;
    PutVarint(5 * kN, &bytes);
    PutVarint(docs.size(), &bytes);
    bytes += docs;
    std::vector<uint32_t> stored(kN, 1);  // frequencies of 2
    if (at < kN) stored[at] = UINT32_MAX;
    pfor.Encode(stored.data(), kN, 0, &bytes);
    const uint64_t cf = at < kN ? 2 * (kN - 1) : 2 * kN;
    const PostingListView view =
        *PostingListView::Parse(pfor, bytes, {.num_postings = kN, .cf = cf, .max_score = 1.0f});
    uint32_t out[kBlockSize];
    ASSERT_TRUE(view.DecodeDocids(pfor, 0, out).ok());
    EXPECT_EQ(out[0], 5u);
    EXPECT_EQ(out[kN - 1], 5 * kN);
    if (at == kN) {
      ASSERT_TRUE(view.DecodeFreqs(pfor, 0, out).ok());
      for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(out[i], 2u);
      EXPECT_TRUE(view.Verify(pfor, 100).ok());
    } else {
      EXPECT_EQ(view.DecodeFreqs(pfor, 0, out).code(), absl::StatusCode::kDataLoss) << at;
      EXPECT_EQ(view.Verify(pfor, 100).code(), absl::StatusCode::kDataLoss) << at;
    }
  }
}

// Docs spaced by `step` from `first`, frequencies cycling 1..5 (large ones now and then).
void MakeList(uint32_t n, uint32_t first, uint32_t step, std::vector<uint32_t>* docids,
              std::vector<uint32_t>* freqs) {
  docids->clear();
  freqs->clear();
  for (uint32_t i = 0; i < n; ++i) {
    docids->push_back(first + i * step + (i * 7) % step);
    freqs->push_back(i % 17 == 3 ? 1000 + i : 1 + i % 5);
  }
}

class PostingListCodecTest : public testing::TestWithParam<std::string> {};

TEST_P(PostingListCodecTest, RoundTripsCompactAndFullLists) {
  const BlockCodec& codec = *GetBlockCodec(GetParam());
  for (const uint32_t n : {1u, 2u, 3u, 127u, 128u, 129u, 255u, 256u, 257u, 1000u}) {
    for (const uint32_t first : {0u, 1u, 70000u}) {
      std::vector<uint32_t> docids, freqs;
      MakeList(n, first, 9, &docids, &freqs);
      const uint32_t num_docs = docids.back() + 1;
      const std::vector<float> norms(num_docs, 1.0f);
      std::string bytes;
      const absl::StatusOr<float> max_score =
          EncodePostingList(codec, docids, freqs, norms.data(), 1.5f, &bytes);
      ASSERT_TRUE(max_score.ok()) << max_score.status();
      // Full-form lists are read in place: give them an aligned buffer.
      std::vector<uint32_t> aligned((bytes.size() + 3) / 4 + 1);
      std::memcpy(aligned.data(), bytes.data(), bytes.size());
      const absl::string_view in(reinterpret_cast<const char*>(aligned.data()), bytes.size());
      absl::StatusOr<PostingListView> view =
          PostingListView::Parse(codec, in, Meta(freqs, *max_score));
      ASSERT_TRUE(view.ok()) << view.status() << " n=" << n;
      EXPECT_EQ(view->compact(), n <= kBlockSize);
      EXPECT_EQ(view->num_postings(), n);
      EXPECT_EQ(view->num_blocks(), (n + kBlockSize - 1) / kBlockSize);
      EXPECT_EQ(view->total_bytes(), bytes.size());
      const PostingListView copy = *view;  // a copy carries its own skip table
      EXPECT_EQ(copy.last_docid(copy.num_blocks() - 1), docids.back());
      EXPECT_EQ(copy.last_docids()[0], docids[std::min<size_t>(n, kBlockSize) - 1]);
      float block_max = 0.0f;
      for (uint32_t b = 0; b < copy.num_blocks(); ++b) {
        block_max = std::max(block_max, copy.block_max(b));
      }
      EXPECT_EQ(block_max, *max_score);
      ASSERT_TRUE(copy.Verify(codec, num_docs).ok()) << copy.Verify(codec, num_docs);
      uint32_t d[kBlockSize], f[kBlockSize];
      for (uint32_t b = 0; b < copy.num_blocks(); ++b) {
        ASSERT_TRUE(copy.DecodeDocids(codec, b, d).ok());
        ASSERT_TRUE(copy.DecodeFreqs(codec, b, f).ok());
        EXPECT_EQ(copy.block_base(b), b == 0 ? 0 : docids[b * kBlockSize - 1]);
        for (uint32_t i = 0; i < copy.block_postings(b); ++i) {
          ASSERT_EQ(d[i], docids[b * kBlockSize + i]) << "n=" << n << " b=" << b << " i=" << i;
          ASSERT_EQ(f[i], freqs[b * kBlockSize + i]);
        }
      }
    }
  }
}

// The compact form of a list's first block decodes to what the full form's first block does.
TEST_P(PostingListCodecTest, CompactAndFullFormsDecodeTheSame) {
  const BlockCodec& codec = *GetBlockCodec(GetParam());
  std::vector<uint32_t> docids, freqs;
  MakeList(300, 4, 11, &docids, &freqs);
  const std::vector<float> norms(docids.back() + 1, 1.0f);
  std::string full, compact;
  const float full_max = *EncodePostingList(codec, docids, freqs, norms.data(), 1.0f, &full);
  const std::vector<uint32_t> head_docs(docids.begin(), docids.begin() + kBlockSize);
  const std::vector<uint32_t> head_freqs(freqs.begin(), freqs.begin() + kBlockSize);
  const float compact_max =
      *EncodePostingList(codec, head_docs, head_freqs, norms.data(), 1.0f, &compact);
  std::vector<uint32_t> aligned(full.size() / 4 + 1);
  std::memcpy(aligned.data(), full.data(), full.size());
  const PostingListView f = *PostingListView::Parse(
      codec, absl::string_view(reinterpret_cast<const char*>(aligned.data()), full.size()),
      Meta(freqs, full_max));
  const PostingListView c = *PostingListView::Parse(codec, compact, Meta(head_freqs, compact_max));
  // The compact form saves the header and the block's skip-table entry.
  EXPECT_LT(compact.size(), f.block_end(0) + kFullListHeaderBytes + SkipTableBytes(1, false));
  EXPECT_EQ(c.last_docid(0), f.last_docid(0));
  EXPECT_EQ(c.block_max(0), f.block_max(0));
  uint32_t cd[kBlockSize], fd[kBlockSize], cf[kBlockSize], ff[kBlockSize];
  ASSERT_TRUE(c.DecodeDocids(codec, 0, cd).ok());
  ASSERT_TRUE(f.DecodeDocids(codec, 0, fd).ok());
  ASSERT_TRUE(c.DecodeFreqs(codec, 0, cf).ok());
  ASSERT_TRUE(f.DecodeFreqs(codec, 0, ff).ok());
  for (size_t i = 0; i < kBlockSize; ++i) {
    EXPECT_EQ(cd[i], fd[i]);
    EXPECT_EQ(cf[i], ff[i]);
  }
}

// Every truncation and every single-byte change of a compact list is refused or decodes to
// increasing docIDs that end on the list's last docID; nothing reads past the list.
TEST_P(PostingListCodecTest, DamagedCompactListsNeverDecodeOutOfOrder) {
  const BlockCodec& codec = *GetBlockCodec(GetParam());
  for (const uint32_t n : {1u, 2u, 40u, 128u}) {
    std::vector<uint32_t> docids, freqs;
    MakeList(n, 3, 5, &docids, &freqs);
    const std::vector<float> norms(docids.back() + 1, 1.0f);
    std::string bytes;
    const float max_score = *EncodePostingList(codec, docids, freqs, norms.data(), 1.0f, &bytes);
    const ListMetadata meta = Meta(freqs, max_score);
    const auto check = [&](const std::string& damaged) {
      // A heap copy of exactly the list's size, so a sanitizer sees any read past it.
      const std::unique_ptr<char[]> copy(new char[damaged.size() + 1]);
      std::memcpy(copy.get(), damaged.data(), damaged.size());
      absl::StatusOr<PostingListView> view =
          PostingListView::Parse(codec, absl::string_view(copy.get(), damaged.size()), meta);
      if (!view.ok()) {
        EXPECT_EQ(view.status().code(), absl::StatusCode::kDataLoss);
        return;
      }
      uint32_t d[kBlockSize], f[kBlockSize];
      if (view->DecodeDocids(codec, 0, d).ok()) {
        for (uint32_t i = 1; i < n; ++i) ASSERT_GT(d[i], d[i - 1]);
        ASSERT_EQ(d[n - 1], view->last_docid(0));
      }
      if (view->DecodeFreqs(codec, 0, f).ok()) {
        for (uint32_t i = 0; i < n; ++i) ASSERT_GE(f[i], 1u);
      }
      (void)view->Verify(codec, docids.back() + 1);
    };
    for (size_t len = 0; len < bytes.size(); ++len) check(bytes.substr(0, len));
    for (size_t at = 0; at < bytes.size(); ++at) {
      for (const uint8_t flip : {0x01, 0x80, 0xff}) {
        std::string damaged = bytes;
        damaged[at] = static_cast<char>(damaged[at] ^ flip);
        check(damaged);
      }
    }
    // Lists of one posting have exactly their docID's varint and need a cf in [1, 2^32).
    if (n == 1) {
      EXPECT_FALSE(PostingListView::Parse(codec, bytes + '\0', meta).ok());
      EXPECT_FALSE(PostingListView::Parse(codec, bytes, {.num_postings = 1, .cf = 0}).ok());
      EXPECT_FALSE(
          PostingListView::Parse(codec, bytes, {.num_postings = 1, .cf = uint64_t{1} << 32}).ok());
    }
  }
  EXPECT_FALSE(PostingListView::Parse(codec, "", {.num_postings = 0}).ok());
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, PostingListCodecTest, testing::ValuesIn(BlockCodecNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tandem::index
