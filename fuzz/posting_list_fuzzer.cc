// Feeds arbitrary bytes as one posting list (index/FORMAT.md, `postings.bin`) to
// PostingListView::Parse, then decodes it block by block as a cursor does and verifies it, with
// every registered codec. Input: codec (1 byte, modulo the number of codecs), document count (4
// bytes, little-endian), the lexicon's df (4 bytes) and cf (8 bytes), then the list's bytes, in a
// buffer that ends exactly where they do. A df of at most 128 selects the compact form.
//
// Checks, besides no crash and no read out of bounds:
//   - a parsed list's header, skip table and block data lie inside the input, and its form is the
//     one its df selects;
//   - every block whose docIDs decode gives strictly increasing docIDs that end on the block's skip
//     entry and stay at or below the list's last skip entry; frequencies that decode are >= 1;
//   - a list that Verify accepts decodes completely, all docIDs below the document count.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/codec_input.h"
#include "fuzz/fuzz_util.h"
#include "index/block_codec.h"
#include "index/posting_list.h"

using tandem::index::kBlockSize;
using tandem::index::PostingListView;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::Input input(data, size);
  const tandem::index::BlockCodec& codec = tandem::fuzz::NextCodec(input);
  const uint32_t num_docs = input.U32();
  tandem::index::ListMetadata meta;
  meta.num_postings = input.U32();
  meta.cf = input.U32();
  meta.cf |= uint64_t{input.U32()} << 32;
  meta.max_score = 1.0f;
  const tandem::fuzz::Bytes bytes(input.rest());
  absl::StatusOr<PostingListView> list = PostingListView::Parse(codec, bytes.view(), meta);
  if (!list.ok()) return 0;
  TANDEM_FUZZ_CHECK(list->num_blocks() >= 1);
  TANDEM_FUZZ_CHECK(list->num_postings() == meta.num_postings);
  TANDEM_FUZZ_CHECK(list->compact() == tandem::index::IsCompactList(meta.num_postings));
  TANDEM_FUZZ_CHECK(list->total_bytes() == bytes.size());
  TANDEM_FUZZ_CHECK(list->data() + list->data_bytes() == bytes.end());

  const uint32_t list_last = list->last_docid(list->num_blocks() - 1);
  uint32_t docs[kBlockSize];
  uint32_t freqs[kBlockSize];
  bool all_decoded = true;
  for (uint32_t b = 0; b < list->num_blocks(); ++b) {
    const uint32_t n = list->block_postings(b);
    TANDEM_FUZZ_CHECK(n >= 1 && n <= kBlockSize);
    if (list->DecodeDocids(codec, b, docs).ok()) {
      for (uint32_t i = 1; i < n; ++i) TANDEM_FUZZ_CHECK(docs[i] > docs[i - 1]);
      TANDEM_FUZZ_CHECK(docs[n - 1] == list->last_docid(b));
      TANDEM_FUZZ_CHECK(docs[n - 1] <= list_last);
    } else {
      all_decoded = false;
    }
    if (list->DecodeFreqs(codec, b, freqs).ok()) {
      for (uint32_t i = 0; i < n; ++i) TANDEM_FUZZ_CHECK(freqs[i] >= 1);
    } else {
      all_decoded = false;
    }
  }
  if (list->Verify(codec, num_docs).ok()) {
    TANDEM_FUZZ_CHECK(all_decoded);
    TANDEM_FUZZ_CHECK(list_last < num_docs);
  }
  return 0;
}
