// PostingListView::DecodeDocids bounds every docID it decodes: a list whose file checksum is right
// but whose skip entries or gaps are wrong (a buggy writer, a hostile file) gives DATA_LOSS, never
// a docID out of order or beyond the list's end.
#include "index/posting_list.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/block_codec.h"

namespace tandem::index {
namespace {

// 400 postings (four blocks), docIDs 0, 3, 6, ...; the view over a copy the test may damage.
struct List {
  std::string bytes;
  std::vector<uint32_t> docids;

  List() {
    std::vector<uint32_t> freqs;
    for (uint32_t i = 0; i < 400; ++i) {
      docids.push_back(3 * i);
      freqs.push_back(1 + i % 3);
    }
    const std::vector<float> norms(3 * 400, 1.0f);
    EXPECT_TRUE(
        EncodePostingList(*GetBlockCodec("pfor"), docids, freqs, norms.data(), 1.0f, &bytes).ok());
  }
  PostingListView View() const { return *PostingListView::Parse(bytes); }
  // The skip entry of `block` inside the bytes (after the 16-byte list header).
  SkipEntry* Skip(uint32_t block) {
    return reinterpret_cast<SkipEntry*>(bytes.data() + sizeof(ListHeader)) + block;
  }
};

TEST(PostingListDecodeTest, IntactListsDecodeEveryBlock) {
  List list;
  const PostingListView view = list.View();
  ASSERT_EQ(view.num_blocks(), 4u);
  uint32_t out[kBlockSize];
  for (uint32_t b = 0; b < view.num_blocks(); ++b) {
    ASSERT_TRUE(view.DecodeDocids(*GetBlockCodec("pfor"), b, out).ok()) << b;
    EXPECT_EQ(out[0], list.docids[b * kBlockSize]);  // docID 0 opens the list: a gap of 0
  }
}

TEST(PostingListDecodeTest, SkipEntriesThatDisagreeWithTheGapsAreDataLoss) {
  uint32_t out[kBlockSize];
  const BlockCodec& pfor = *GetBlockCodec("pfor");
  {
    List list;  // block 1 claims to end later than its gaps say
    list.Skip(1)->last_docid += 1;
    EXPECT_EQ(list.View().DecodeDocids(pfor, 1, out).code(), absl::StatusCode::kDataLoss);
  }
  {
    List list;  // block 2 claims to end beyond the list's last docID
    list.Skip(2)->last_docid = 0xfffffff0u;
    EXPECT_EQ(list.View().DecodeDocids(pfor, 2, out).code(), absl::StatusCode::kDataLoss);
    // Block 3 starts from that base: its gaps would wrap past 2^32.
    EXPECT_EQ(list.View().DecodeDocids(pfor, 3, out).code(), absl::StatusCode::kDataLoss);
  }
  {
    List list;  // block 1's base moved back: its docIDs would repeat block 0's
    list.Skip(0)->last_docid -= 30;
    const absl::Status s = list.View().DecodeDocids(pfor, 1, out);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
}

// A frequency section holding 2^32 - 1 (a frequency of 2^32) is DATA_LOSS, not a frequency that
// wrapped to 0: DecodeFreqs promises frequencies of at least 1.
TEST(PostingListDecodeTest, FrequencyBeyond32BitsIsDataLoss) {
  const BlockCodec& pfor = *GetBlockCodec("pfor");
  std::string bytes;
  const std::vector<uint32_t> docids = {5};
  const std::vector<uint32_t> freqs = {7};
  const std::vector<float> norms(6, 1.0f);
  ASSERT_TRUE(EncodePostingList(pfor, docids, freqs, norms.data(), 1.0f, &bytes).ok());
  // Re-encode the frequency section with the value a writer never stores.
  std::string freq_section;
  const uint32_t wrapped = UINT32_MAX;
  pfor.Encode(&wrapped, 1, 0, &freq_section);
  const SkipEntry* skip = reinterpret_cast<const SkipEntry*>(bytes.data() + sizeof(ListHeader));
  const size_t data_at = sizeof(ListHeader) + sizeof(SkipEntry);
  bytes.resize(data_at + skip->docs_end);
  bytes += freq_section;
  reinterpret_cast<SkipEntry*>(bytes.data() + sizeof(ListHeader))->block_end =
      static_cast<uint32_t>(bytes.size() - data_at);
  const PostingListView view = *PostingListView::Parse(bytes);
  uint32_t out[kBlockSize];
  EXPECT_EQ(view.DecodeFreqs(pfor, 0, out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(view.Verify(pfor, 6).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tandem::index
