// Feeds arbitrary bytes, as a whole index file, to the frame check every index file goes through
// before anything reads it (VerifyFrame, which MappedFile::Open runs over its mapping), once for
// each file kind: manifest, lexicon, postings, document table and GPU layouts (index/FORMAT.md).
//
// Checks, besides no crash and no read outside the input: a frame is accepted for at most one
// kind, and an accepted frame's payload is exactly the bytes between the 32-byte header and the
// 16-byte footer.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "index/file_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tandem::index::FileKind;
  const tandem::fuzz::Bytes file({reinterpret_cast<const char*>(data), size});
  int accepted = 0;
  for (FileKind kind : {FileKind::kManifest, FileKind::kLexicon, FileKind::kPostings,
                        FileKind::kDocuments, FileKind::kGpuLayouts, FileKind::kCollectionDfs}) {
    absl::StatusOr<absl::string_view> payload =
        tandem::index::VerifyFrame(file.view(), kind, "fuzz-input");
    if (!payload.ok()) continue;
    ++accepted;
    TANDEM_FUZZ_CHECK(size >= tandem::index::kHeaderBytes + tandem::index::kFooterBytes);
    TANDEM_FUZZ_CHECK(payload->data() == file.data() + tandem::index::kHeaderBytes);
    TANDEM_FUZZ_CHECK(payload->size() ==
                      size - tandem::index::kHeaderBytes - tandem::index::kFooterBytes);
  }
  TANDEM_FUZZ_CHECK(accepted <= 1);
  return 0;
}
