// File: file_format.h
//
// Framing shared by every index file: a 32-byte header (magic, file kind, format version) and a
// 16-byte footer (payload size, XXH3-64 checksum of everything before the checksum). Files are
// written with FileWriter and read with MappedFile, which memory-maps the file and verifies the
// frame and the checksum before handing out the payload. A damaged file yields a clear error naming
// the file and what is wrong; nothing downstream ever sees unverified bytes. Layout in
// index/FORMAT.md.
//
//   TANDEM_ASSIGN_OR_RETURN(auto writer, FileWriter::Create(dir + "/lexicon.bin",
//   FileKind::kLexicon)); TANDEM_RETURN_IF_ERROR(writer->Append(bytes));
//   TANDEM_RETURN_IF_ERROR(writer->Finish());
//   ...
//   TANDEM_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(dir + "/lexicon.bin",
//   FileKind::kLexicon)); absl::string_view payload = file.payload();
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::index {

// Bumped whenever any file's byte layout changes; readers accept exactly this version (FORMAT.md).
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr size_t kHeaderBytes = 32;
inline constexpr size_t kFooterBytes = 16;

// kGpuLayouts: the optional GPU layouts beside an index (gpu/stored_layouts.h); kCollectionDfs: a
// shard's collection document frequencies; kSubscriptions: a node's standing queries
// (match/subscription_file.h), framed like index files though they live outside the index;
// kAttributes: the documents' attribute bitmaps (index/attribute_index.h), optional;
// kCommitPoint: a live index's segments_G (live/commit_point.h).
enum class FileKind {
  kManifest,
  kLexicon,
  kPostings,
  kDocuments,
  kGpuLayouts,
  kCollectionDfs,
  kSubscriptions,
  kAttributes,
  kCommitPoint
};

// The 8-byte kind tag stored in the header ("LEXICON\0", ...).
absl::string_view FileKindTag(FileKind kind);

// Checks the frame of one whole index file held in memory (magic, kind, version, sizes, checksum)
// and returns its payload, a view into `file`. `name` names the file in messages. Errors as
// MappedFile::Open's, which runs this over its mapping.
absl::StatusOr<absl::string_view> VerifyFrame(absl::string_view file, FileKind kind,
                                              absl::string_view name);

// Where an opened index file's bytes live.
enum class FileMemory {
  // A read-only mapping of the file: pages shared with the page cache and with every process that
  // maps the file, in 4 KiB pages, given back to the kernel under memory pressure.
  kMapped,
  // A read-only private copy in anonymous memory aligned to 2 MiB, which the kernel is asked to
  // back with transparent huge pages (madvise(MADV_HUGEPAGE); taken where THP is "always" or
  // "madvise"). A search that jumps between lists and blocks of a multi-gigabyte postings file
  // touches a new 4 KiB page at nearly every jump, and each costs a TLB miss and a page walk; a
  // 2 MiB page covers 512 of them. The file's page-cache pages are dropped once copied
  // (POSIX_FADV_DONTNEED, which spares pages other processes map), so the index is held once. The
  // copy is the process's own memory: it is not shared, and not reclaimed under pressure.
  kHugePages,
};

// "mapped" or "huge-pages".
absl::string_view FileMemoryName(FileMemory memory);
// The names above; INVALID_ARGUMENT naming the value and the choices otherwise.
absl::StatusOr<FileMemory> ParseFileMemory(absl::string_view name);
// For absl flags (--postings-memory).
bool AbslParseFlag(absl::string_view text, FileMemory* memory, std::string* error);
std::string AbslUnparseFlag(FileMemory memory);

// A verified, read-only view of one index file in memory, mapped or copied (FileMemory). Movable,
// not copyable.
class MappedFile {
 public:
  // Maps (or copies, FileMemory::kHugePages) `path` and checks magic, kind, version, sizes and
  // checksum. Errors: NOT_FOUND (missing), DATA_LOSS (truncated, corrupted, not an index file),
  // FAILED_PRECONDITION (other format version), RESOURCE_EXHAUSTED (no memory for the copy).
  static absl::StatusOr<MappedFile> Open(const std::string& path, FileKind kind,
                                         FileMemory memory = FileMemory::kMapped);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The bytes between header and footer. Starts 32-byte aligned relative to the mapping.
  absl::string_view payload() const { return payload_; }
  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // The footer's checksum (XXH3-64 of header and payload), verified by Open; 0 when nothing is
  // open. The manifest names each file of an index by it.
  uint64_t checksum() const;
  FileMemory memory() const { return memory_; }

 private:
  void Reset();

  std::string path_;
  void* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapped_bytes_ = 0;  // of the mapping at data_: size_, or the copy's 2 MiB multiple
  FileMemory memory_ = FileMemory::kMapped;
  absl::string_view payload_;
};

// Writes one framed file sequentially, hashing as it goes. Finish() writes the footer, flushes and
// fsyncs. A writer destroyed without Finish() leaves an incomplete file behind, which is why index
// directories are built under a temporary name (IndexWriter).
class FileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<FileWriter>> Create(const std::string& path, FileKind kind);
  ~FileWriter();

  absl::Status Append(absl::string_view bytes);
  // Appends zero bytes until the payload offset is a multiple of `alignment`.
  absl::Status Align(size_t alignment);
  // Bytes of payload written so far (the offset of the next byte within the payload).
  uint64_t payload_offset() const { return payload_bytes_; }
  absl::Status Finish();
  // After Finish: the whole file's size and its footer's checksum, as MappedFile reads them.
  uint64_t file_bytes() const;
  uint64_t checksum() const;

 private:
  struct State;
  explicit FileWriter(std::unique_ptr<State> state);
  absl::Status Flush();

  std::unique_ptr<State> state_;
  uint64_t payload_bytes_ = 0;
};

}  // namespace tandem::index
