#include "index/file_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/enum_names.h"

namespace tandem::index {
namespace {

constexpr char kMagic[8] = {'T', 'A', 'N', 'D', 'E', 'M', 'I', 'X'};
constexpr size_t kWriteBuffer = 1 << 20;

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  int err = errno;
  std::string msg = absl::StrCat(what, " '", path, "': ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

// write(2) until every byte is out, retrying on EINTR and short writes.
absl::Status WriteAll(int fd, const char* p, size_t left, const std::string& path) {
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write index file", path);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

// Each file's 8-byte kind tag (FORMAT.md), NUL-padded where the name is shorter.
constexpr base::EnumName<FileKind> kFileKindTags[] = {
    {FileKind::kManifest, "MANIFEST"},      {FileKind::kLexicon, "LEXICON\0"},
    {FileKind::kPostings, "POSTINGS"},      {FileKind::kDocuments, "DOCTABLE"},
    {FileKind::kGpuLayouts, "GPULAYTS"},    {FileKind::kCollectionDfs, "COLLDFS\0"},
    {FileKind::kSubscriptions, "SUBSCRIB"}, {FileKind::kAttributes, "ATTRIBS\0"},
    {FileKind::kCommitPoint, "SEGMENTS"}};

absl::string_view FileKindTag(FileKind kind) {
  return absl::string_view(base::NameOf(kFileKindTags, kind, "UNKNOWN\0"), 8);
}

absl::StatusOr<absl::string_view> VerifyFrame(absl::string_view file, FileKind kind,
                                              absl::string_view name) {
  const uint64_t size = file.size();
  if (size < kHeaderBytes + kFooterBytes) {
    return absl::DataLossError(
        absl::StrFormat("index file '%s' is truncated: %d bytes, a valid file has at least %d",
                        name, size, kHeaderBytes + kFooterBytes));
  }
  const char* bytes = file.data();
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(
        absl::StrCat("'", name, "' is not a Tandem index file (bad magic number)"));
  }
  absl::string_view tag(bytes + 8, 8);
  if (tag != FileKindTag(kind)) {
    return absl::DataLossError(absl::StrCat(
        "index file '", name, "' holds the wrong kind of data: '", absl::CHexEscape(tag),
        "', expected '", absl::CHexEscape(FileKindTag(kind)), "'"));
  }
  const uint32_t version = Load<uint32_t>(bytes + 16);
  if (version != kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrFormat("index file '%s' has format version %d, this build reads version %d; "
                        "rebuild the index with "
                        "this version of tandem-index",
                        name, version, kFormatVersion));
  }
  const uint64_t payload_size = Load<uint64_t>(bytes + size - kFooterBytes);
  if (payload_size != size - kHeaderBytes - kFooterBytes) {
    return absl::DataLossError(absl::StrFormat(
        "index file '%s' is truncated or has trailing bytes: the footer records %d payload bytes, "
        "the file holds %d",
        name, payload_size, size - kHeaderBytes - kFooterBytes));
  }
  const uint64_t stored = Load<uint64_t>(bytes + size - 8);
  const uint64_t computed = XXH3_64bits(bytes, size - 8);
  if (stored != computed) {
    return absl::DataLossError(absl::StrFormat(
        "index file '%s' is corrupted: checksum mismatch (stored %016x, computed %016x)", name,
        stored, computed));
  }
  return file.substr(kHeaderBytes, payload_size);
}

// --- MappedFile
// -------------------------------------------------------------------------------------

constexpr base::EnumName<FileMemory> kFileMemoryNames[] = {{FileMemory::kMapped, "mapped"},
                                                           {FileMemory::kHugePages, "huge-pages"}};

absl::string_view FileMemoryName(FileMemory memory) {
  return base::NameOf(kFileMemoryNames, memory);
}

absl::StatusOr<FileMemory> ParseFileMemory(absl::string_view name) {
  if (const std::optional<FileMemory> memory = base::ValueOfName(kFileMemoryNames, name)) {
    return *memory;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown index memory '", name, "' (mapped, huge-pages)"));
}

bool AbslParseFlag(absl::string_view text, FileMemory* memory, std::string* error) {
  absl::StatusOr<FileMemory> parsed = ParseFileMemory(text);
  if (!parsed.ok()) {
    *error = std::string(parsed.status().message());
    return false;
  }
  *memory = *parsed;
  return true;
}

std::string AbslUnparseFlag(FileMemory memory) { return std::string(FileMemoryName(memory)); }

namespace {

constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

// The `size` bytes of the file open as `fd`, read into a read-only anonymous mapping that starts on
// a 2 MiB boundary and spans whole 2 MiB pages (*mapped_bytes), advised MADV_HUGEPAGE before the
// first write so that the kernel backs it with huge pages as the reads fault it in.
absl::StatusOr<void*> ReadIntoHugePages(int fd, uint64_t size, const std::string& path,
                                        uint64_t* mapped_bytes) {
  const uint64_t bytes = (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // One huge page more than needed, then the unaligned head and the tail beyond it unmapped.
  void* raw = ::mmap(nullptr, bytes + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot allocate %d bytes to hold index file '%s' in huge pages: %s", bytes,
                        path, std::strerror(errno)));
  }
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (start > begin) ::munmap(raw, start - begin);
  ::munmap(reinterpret_cast<void*>(start + bytes), begin + kHugePageBytes - start);
  char* data = reinterpret_cast<char*>(start);
#ifdef MADV_HUGEPAGE
  ::madvise(data, bytes, MADV_HUGEPAGE);  // advice: where THP is "never", ordinary pages
#endif
  constexpr uint64_t kChunk = uint64_t{64} << 20;
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, data + done, std::min(kChunk, size - done), done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status status =
          n < 0
              ? ErrnoError("cannot read index file", path)
              : absl::DataLossError(absl::StrFormat(
                    "index file '%s' shrank while it was read: %d of %d bytes", path, done, size));
      ::munmap(data, bytes);
      return status;
    }
    done += static_cast<uint64_t>(n);
  }
  ::mprotect(data, bytes, PROT_READ);  // as read-only as a mapping of the file
  *mapped_bytes = bytes;
  return data;
}

}  // namespace

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path, FileKind kind,
                                            FileMemory memory) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open index file", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    absl::Status s = ErrnoError("cannot stat index file", path);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat("index file '", path, "' is not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes + kFooterBytes) {
    ::close(fd);
    return absl::DataLossError(
        absl::StrFormat("index file '%s' is truncated: %d bytes, a valid file has at least %d",
                        path, size, kHeaderBytes + kFooterBytes));
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = size;
  file.memory_ = memory;
  if (memory == FileMemory::kHugePages) {
    absl::StatusOr<void*> copy = ReadIntoHugePages(fd, size, path, &file.mapped_bytes_);
    if (copy.ok()) {
      // The page cache's copy is no longer needed by this process (pages mapped elsewhere stay).
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    }
    ::close(fd);
    if (!copy.ok()) return copy.status();
    file.data_ = *copy;
  } else {
    void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) return ErrnoError("cannot map index file", path);
    file.data_ = data;
    file.mapped_bytes_ = size;
  }
  absl::StatusOr<absl::string_view> payload =
      VerifyFrame(absl::string_view(static_cast<const char*>(file.data_), size), kind, path);
  if (!payload.ok()) return payload.status();
  if (memory == FileMemory::kMapped) ::madvise(file.data_, size, MADV_WILLNEED);
  file.payload_ = *payload;
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Reset();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    memory_ = other.memory_;
    payload_ = std::exchange(other.payload_, {});
  }
  return *this;
}

MappedFile::~MappedFile() { Reset(); }

uint64_t MappedFile::checksum() const {
  if (payload_.data() == nullptr) return 0;
  uint64_t sum;
  std::memcpy(&sum, payload_.data() + payload_.size() + 8, 8);  // after the payload size
  return sum;
}

void MappedFile::Reset() {
  if (data_ != nullptr) ::munmap(data_, mapped_bytes_);
  data_ = nullptr;
  size_ = 0;
  mapped_bytes_ = 0;
  payload_ = {};
}

// --- FileWriter
// -------------------------------------------------------------------------------------

struct FileWriter::State {
  std::string path;
  int fd = -1;
  XXH3_state_t* hash = nullptr;
  std::string buffer;
  uint64_t checksum = 0;
  bool finished = false;
  ~State() {
    if (fd >= 0) ::close(fd);
    if (hash != nullptr) XXH3_freeState(hash);
  }
};

FileWriter::FileWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
FileWriter::~FileWriter() = default;

absl::StatusOr<std::unique_ptr<FileWriter>> FileWriter::Create(const std::string& path,
                                                               FileKind kind) {
  auto state = std::make_unique<State>();
  state->path = path;
  state->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (state->fd < 0) return ErrnoError("cannot create index file", path);
  state->hash = XXH3_createState();
  if (state->hash == nullptr || XXH3_64bits_reset(state->hash) == XXH_ERROR) {
    return absl::ResourceExhaustedError("cannot allocate checksum state");
  }
  state->buffer.reserve(kWriteBuffer);
  char header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, 8);
  std::memcpy(header + 8, FileKindTag(kind).data(), 8);
  std::memcpy(header + 16, &kFormatVersion, 4);
  const uint32_t header_bytes = kHeaderBytes;
  std::memcpy(header + 20, &header_bytes, 4);
  state->buffer.append(header, kHeaderBytes);
  return std::unique_ptr<FileWriter>(new FileWriter(std::move(state)));
}

absl::Status FileWriter::Append(absl::string_view bytes) {
  if (state_->finished) return absl::FailedPreconditionError("FileWriter::Append after Finish");
  payload_bytes_ += bytes.size();
  if (state_->buffer.size() + bytes.size() > kWriteBuffer) {
    absl::Status s = Flush();
    if (!s.ok()) return s;
  }
  if (bytes.size() >= kWriteBuffer) {
    // Large appends bypass the buffer.
    XXH3_64bits_update(state_->hash, bytes.data(), bytes.size());
    return WriteAll(state_->fd, bytes.data(), bytes.size(), state_->path);
  }
  state_->buffer.append(bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status FileWriter::Align(size_t alignment) {
  const size_t pad = (alignment - payload_bytes_ % alignment) % alignment;
  if (pad == 0) return absl::OkStatus();
  static const char kZeros[64] = {};
  return Append(absl::string_view(kZeros, pad));
}

absl::Status FileWriter::Flush() {
  std::string& b = state_->buffer;
  if (b.empty()) return absl::OkStatus();
  XXH3_64bits_update(state_->hash, b.data(), b.size());
  absl::Status s = WriteAll(state_->fd, b.data(), b.size(), state_->path);
  b.clear();
  return s;
}

absl::Status FileWriter::Finish() {
  if (state_->finished) return absl::FailedPreconditionError("FileWriter::Finish called twice");
  char size_bytes[8];
  std::memcpy(size_bytes, &payload_bytes_, 8);
  state_->buffer.append(size_bytes, 8);
  absl::Status s = Flush();
  if (!s.ok()) return s;
  const uint64_t checksum = XXH3_64bits_digest(state_->hash);
  state_->checksum = checksum;
  char sum[8];
  std::memcpy(sum, &checksum, 8);
  state_->buffer.append(sum, 8);
  // The checksum itself is not hashed: write it directly.
  s = WriteAll(state_->fd, state_->buffer.data(), 8, state_->path);
  if (!s.ok()) return s;
  state_->buffer.clear();
  if (::fsync(state_->fd) != 0) return ErrnoError("cannot sync index file", state_->path);
  if (::close(state_->fd) != 0) {
    state_->fd = -1;
    return ErrnoError("cannot close index file", state_->path);
  }
  state_->fd = -1;
  state_->finished = true;
  return absl::OkStatus();
}

uint64_t FileWriter::file_bytes() const { return kHeaderBytes + payload_bytes_ + kFooterBytes; }

uint64_t FileWriter::checksum() const { return state_->checksum; }

}  // namespace tandem::index
