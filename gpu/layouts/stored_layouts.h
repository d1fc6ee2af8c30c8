// File: stored_layouts.h
//
// GPU layouts stored beside an index, in `gpu_layouts.bin`, so that a list's first use on the
// device is a copy of its images rather than a host transcode: a cold query then costs about what
// a warm one does plus the copy. `tandem-index gpu-layouts DIR` writes the file with
// TranscodeList's layouts of every term; the device cache maps it (StoredGpuLayouts) and copies a
// term's images from it. Framed like every index file (magic, kind `GPULAYTS`, format version, XXH3
// checksum checked at open; index/file_format.h); host code only.
//
// Payload, little-endian:
//   header   32 bytes: u32 layout version (kStoredLayoutsVersion), u32 docID codec (GpuCodec),
//            u32 PForDelta block size, u32 reserved, u64 terms, u64 postings (both the index's)
//   entries  per term, in ordinal order, each 16-byte aligned: the docID descriptor (PForDesc or
//            RiceDesc), the FreqDesc, each padded to 16 bytes, then the docID image words and the
//            frequency image words, each padded to 16 bytes
//   table    per term, 16 bytes: u64 offset of its entry in the payload, u64 its bytes
//   trailer  16 bytes: u64 offset of the table, u64 terms
// Descriptors are the in-memory structs of gpu/list_format.h (trivially copyable, fixed layout);
// kStoredLayoutsVersion changes whenever they or the builders do.
//
//   TANDEM_RETURN_IF_ERROR(WriteGpuLayouts(index, {}, dir + "/gpu_layouts.bin", 16));
//   TANDEM_ASSIGN_OR_RETURN(auto stored, StoredGpuLayouts::Open(dir + "/gpu_layouts.bin", index));
//   TANDEM_ASSIGN_OR_RETURN(StoredList list, stored->Get(term));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpu/layouts/list_format.h"
#include "gpu/layouts/list_layout.h"
#include "index/file_format.h"
#include "index/index.h"

namespace tandem::gpu {

inline constexpr uint32_t kStoredLayoutsVersion = 1;
inline constexpr const char* kStoredLayoutsFile = "gpu_layouts.bin";

// One term's stored images: views into the mapping, valid while the StoredGpuLayouts lives.
struct StoredList {
  std::variant<PForDesc, RiceDesc> docid_desc;
  absl::Span<const uint32_t> docid_words;
  FreqDesc freq_desc;
  absl::Span<const uint32_t> freq_words;

  uint32_t num_postings() const { return freq_desc.num_postings; }
};

// Writes the layouts of every term of `index` (TranscodeList with `options`, the docID codec the
// index codec's DefaultGpuCodec) to `path`, transcoding on `threads` threads (at least 1). The file
// is written under a temporary name and renamed when complete.
absl::Status WriteGpuLayouts(const index::Index& index, const TranscodeOptions& options,
                             const std::string& path, int threads);

// The checks that keep the GPU decoders inside the images of a stored list whose descriptors
// passed CheckDesc: every per-block range (exceptions, second-level exceptions, unary sums) starts
// at 0, never decreases and ends at its total; second-level exception indices point at exceptions;
// block bases increase and stay below `num_docs`. O(blocks + second-level exceptions), no decoding:
// the decoded docIDs themselves are checked on the device (CheckDeviceDocids in search_form.h).
absl::Status CheckStoredList(const StoredList& list, uint32_t num_docs);

class StoredGpuLayouts {
 public:
  // Maps and checks the file against `index` (terms, postings, codec). NOT_FOUND when there is
  // none; DATA_LOSS when damaged; FAILED_PRECONDITION when written for another index or another
  // layout version.
  static absl::StatusOr<std::unique_ptr<StoredGpuLayouts>> Open(const std::string& path,
                                                                const index::Index& index);

  GpuCodec codec() const { return codec_; }
  uint32_t pfor_block_size() const { return pfor_block_size_; }
  uint64_t num_terms() const { return num_terms_; }

  // The images of `term`, checked against its descriptors, its document frequency and the
  // collection size (CheckStoredList); DATA_LOSS when they disagree.
  absl::StatusOr<StoredList> Get(const index::TermInfo& term) const;

 private:
  StoredGpuLayouts() = default;

  index::MappedFile file_;
  GpuCodec codec_ = GpuCodec::kPFor;
  uint32_t pfor_block_size_ = 0;
  uint64_t num_terms_ = 0;
  uint32_t num_docs_ = 0;
  const unsigned char* table_ = nullptr;
};

}  // namespace tandem::gpu
