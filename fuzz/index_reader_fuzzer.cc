// Feeds arbitrary bytes as the payloads of an index's four files (manifest JSON, lexicon, postings,
// document table; split as index_input.h says) to Index::FromPayloads, which runs exactly the
// checks Index::Open runs after the frames, then reads everything the engines read: every term of
// the lexicon, its posting list (parsed, verified and decoded block by block, as a cursor does),
// every document's length, external id and stored fields. Each payload sits in its own exact-size
// buffer, so a read past one is caught. Frames and checksums are index_frame_fuzzer's.
//
// Checks, besides no crash and no read out of bounds:
//   - Lookup finds every term of the lexicon at its own ordinal;
//   - a list that Index::postings returns holds df postings, and every block that decodes gives
//     strictly increasing docIDs below the document count and frequencies of at least 1;
//   - VerifyPostings succeeds exactly when every list parses and verifies;
//   - the manifest survives a JSON round trip.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "fuzz/index_input.h"
#include "index/index.h"
#include "index/posting_list.h"

namespace {

using tandem::fuzz::Bytes;
using tandem::index::Index;
using tandem::index::kBlockSize;
using tandem::index::PostingListView;

// Decodes every block of `list` as a cursor would and checks what decodes; true when all of it
// does.
bool WalkList(const Index& index, const PostingListView& list) {
  uint32_t docs[kBlockSize];
  uint32_t freqs[kBlockSize];
  bool all_ok = true;
  for (uint32_t b = 0; b < list.num_blocks(); ++b) {
    const uint32_t n = list.block_postings(b);
    TANDEM_FUZZ_CHECK(n >= 1 && n <= kBlockSize);
    if (list.DecodeDocids(index.codec(), b, docs).ok()) {
      for (uint32_t i = 0; i < n; ++i) {
        TANDEM_FUZZ_CHECK(docs[i] < index.num_docs());
        TANDEM_FUZZ_CHECK(i == 0 || docs[i] > docs[i - 1]);
      }
      TANDEM_FUZZ_CHECK(docs[n - 1] == list.last_docid(b));
    } else {
      all_ok = false;
    }
    if (list.DecodeFreqs(index.codec(), b, freqs).ok()) {
      for (uint32_t i = 0; i < n; ++i) TANDEM_FUZZ_CHECK(freqs[i] >= 1);
    } else {
      all_ok = false;
    }
  }
  return all_ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = tandem::fuzz::SplitPayloads({reinterpret_cast<const char*>(data), size});
  const Bytes manifest(parts[0]), lexicon(parts[1]), postings(parts[2]), documents(parts[3]);
  absl::StatusOr<std::unique_ptr<Index>> opened =
      Index::FromPayloads({.manifest = manifest.view(),
                           .lexicon = lexicon.view(),
                           .postings = postings.view(),
                           .documents = documents.view()},
                          "fuzz-index");
  if (!opened.ok()) return 0;
  const Index& index = **opened;

  bool all_lists_ok = true;
  for (uint64_t ordinal = 0; ordinal < index.num_terms(); ++ordinal) {
    const tandem::index::TermInfo term = index.term_at(ordinal);
    const std::optional<tandem::index::TermInfo> found = index.Lookup(term.term);
    TANDEM_FUZZ_CHECK(found.has_value() && found->ordinal == ordinal &&
                      found->list_offset == term.list_offset && found->df == term.df);
    absl::StatusOr<PostingListView> list = index.postings(term);
    if (!list.ok()) {
      all_lists_ok = false;
      continue;
    }
    TANDEM_FUZZ_CHECK(list->num_postings() == term.df);
    const bool verified = list->Verify(index.codec(), index.num_docs()).ok();
    const bool walked = WalkList(index, *list);
    // Verify decodes what the walk decodes and checks more, never less.
    TANDEM_FUZZ_CHECK(!verified || walked);
    all_lists_ok = all_lists_ok && verified;
  }
  TANDEM_FUZZ_CHECK(index.VerifyPostings().ok() == all_lists_ok);

  uint64_t total_length = 0;
  for (uint32_t doc = 0; doc < index.num_docs(); ++doc) {
    total_length += index.doc_length(doc);
    (void)index.external_id(doc);
    for (const auto& [name, value] : index.stored_fields(doc)) {
      TANDEM_FUZZ_CHECK(name.data() >= documents.data() &&
                        value.data() + value.size() <= documents.data() + documents.size());
    }
  }
  TANDEM_FUZZ_CHECK(total_length == index.stats().total_doc_length);

  const std::string json = index.manifest().ToJson();
  absl::StatusOr<tandem::index::IndexManifest> again = tandem::index::IndexManifest::FromJson(json);
  TANDEM_FUZZ_CHECK(again.ok());
  TANDEM_FUZZ_CHECK(again->ToJson() == json);
  return 0;
}
