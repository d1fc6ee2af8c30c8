// Parallel parsing (ReaderOptions::threads > 1): the input is listed as units of work in reading
// order, whole files or chunks of large ones cut at record starts, and parser threads each run the
// format's own reader over one unit (OpenUnitReader), keeping its documents and its bad-document
// reports. Next hands them out unit after unit, in the listed order, calling on_bad_document
// where a single reader would have, so docIDs, bad-document locations and everything that depends
// on reading order (--strict, --duplicate-ids) are those of a one-thread build.
//
// What is cut into chunks: formats whose FormatSpec has starts_record, i.e. one record a line
// (beir, lines) or SGML elements found line by line (trec <DOC>, reuters <REUTERS>,
// wikiextractor <doc>): a line opening a record ends whatever came before it, so the reader of a
// chunk starting there reads what the reader of the whole file reads from that line on. What is
// not: e-mail (a message is a whole file, and a record file is one JSON document), smart (a
// record's end is known only from the next .I line, which its reader carries over) and npl
// (blocks end at a "/" line, so a cut could not be checked from the line alone); their files are
// parsed whole, one per thread. Pipes and devices (no size, no seeking) and files of those formats
// larger than a quarter of max_bytes_in_flight are read by Next's thread as it goes, as before.
//
// Memory: the units listed and not yet read to their end by Next form a window of at most
// 4 × threads units and max_bytes_in_flight input bytes (one unit always gets in), so parsed text
// waiting for the inverter stays bounded whatever the input's size.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index_builder/readers_internal.h"

namespace tandem::index_builder::internal {
namespace {

namespace fs = std::filesystem;

// One unit of parsing work.
struct Unit {
  InputFile file;         // a whole file, or a chunk of it (begin, end, first_line)
  uint64_t bytes = 0;     // its input bytes, for progress and the window's bound
  bool streamed = false;  // read by Next's thread as it goes, not parsed ahead
  absl::Status error;     // listing failed here: reading stops with this error
};

// A file's lines through one large buffer, found with memchr and never copied: listing cuts large
// files at record starts, and std::getline's byte-at-a-time copying made that scan the longest
// part of listing.
class LineScanner {
 public:
  bool Open(const std::string& path) {
    in_.close();
    in_.clear();
    in_.open(path, std::ios::binary);
    begin_ = end_ = 0;
    eof_ = false;
    return static_cast<bool>(in_);
  }
  void Close() { in_.close(); }
  // The next line, without its '\n' (valid until the next call), and whether a '\n' ended it;
  // false at the end of the file or on a read error (then bad()).
  bool Next(absl::string_view* line, bool* newline) {
    while (true) {
      const char* data = buffer_.data();
      if (const void* nl = std::memchr(data + begin_, '\n', end_ - begin_)) {
        const size_t at = static_cast<const char*>(nl) - data;
        *line = absl::string_view(data + begin_, at - begin_);
        *newline = true;
        begin_ = at + 1;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) return false;
        *line = absl::string_view(data + begin_, end_ - begin_);
        *newline = false;
        begin_ = end_;
        return true;
      }
      // Keep the line begun so far, and read more behind it.
      std::memmove(buffer_.data(), data + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
      if (end_ == buffer_.size()) buffer_.resize(2 * buffer_.size());
      in_.read(buffer_.data() + end_, static_cast<std::streamsize>(buffer_.size() - end_));
      const size_t got = static_cast<size_t>(in_.gcount());
      end_ += got;
      if (got == 0) eof_ = true;
    }
  }
  bool bad() const { return in_.bad(); }

 private:
  std::ifstream in_;
  std::vector<char> buffer_ = std::vector<char>(1 << 20);
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
};

// Lists the input's units in reading order. A large file of a format that can be cut is read once
// here, line by line, to count lines and find record starts; the chunks' readers read it again,
// mostly from the page cache.
class UnitLister {
 public:
  UnitLister(const FormatSpec& format, std::vector<InputFile> files, uint64_t chunk_bytes,
             uint64_t whole_file_limit)
      : format_(format),
        files_(std::move(files)),
        chunk_bytes_(std::max<uint64_t>(chunk_bytes, 1)),
        whole_file_limit_(whole_file_limit) {}

  // The next unit; false after the last one, and after a unit with an error.
  bool Next(Unit* unit) {
    *unit = Unit();
    while (!done_) {
      if (cutting_ != nullptr) {
        if (NextChunk(unit)) return true;
        continue;
      }
      if (next_file_ == files_.size()) break;
      const InputFile& file = files_[next_file_++];
      std::error_code error;
      const fs::file_status status = fs::status(file.path, error);
      uint64_t size = 0;
      bool regular = !error && fs::is_regular_file(status);
      if (regular) {
        size = fs::file_size(file.path, error);
        regular = !error;
      }
      unit->file = file;
      if (!regular) {
        // A pipe or device, or a file that vanished: its reader says what is wrong, in turn.
        unit->streamed = true;
        return true;
      }
      if (format_.starts_record != nullptr && size > chunk_bytes_) {
        if (scanner_.Open(file.path)) {
          cutting_ = &file;
          chunk_begin_ = pos_ = 0;
          chunk_line_ = line_ = 1;
          continue;
        }
        // Unreadable: listed whole, so its reader fails with the single reader's message.
      }
      unit->bytes = size;
      unit->streamed = format_.starts_record == nullptr && size > whole_file_limit_;
      return true;
    }
    done_ = true;
    return false;
  }

 private:
  // The next chunk of *cutting_: whole lines up to chunk_bytes_, then on to the next record start.
  // False when the file has no more.
  bool NextChunk(Unit* unit) {
    const InputFile& file = *cutting_;
    absl::string_view view;
    bool newline = false;
    while (true) {
      const uint64_t line_start = pos_;
      const int64_t line_number = line_;
      if (!scanner_.Next(&view, &newline)) {
        if (scanner_.bad()) {
          unit->file = file;
          unit->error = absl::DataLossError(
              absl::StrCat("error reading ", file.name, " after line ", line_number - 1));
          done_ = true;
          return true;
        }
        break;
      }
      pos_ += view.size() + (newline ? 1 : 0);
      ++line_;
      if (line_start - chunk_begin_ < chunk_bytes_) continue;
      if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
      if (!format_.starts_record(view)) continue;
      EmitChunk(line_start, unit);
      chunk_begin_ = line_start;
      chunk_line_ = line_number;
      return true;
    }
    // The end of the file: the last chunk reads to it, as the single reader does.
    const bool empty = pos_ == chunk_begin_;
    if (!empty) {
      EmitChunk(InputFile::kToEnd, unit);
      unit->bytes = pos_ - chunk_begin_;
    }
    cutting_ = nullptr;
    scanner_.Close();
    return !empty;
  }

  void EmitChunk(uint64_t end, Unit* unit) const {
    unit->file = *cutting_;
    unit->file.begin = chunk_begin_;
    unit->file.end = end;
    unit->file.first_line = chunk_line_;
    unit->bytes = end - chunk_begin_;
  }

  const FormatSpec& format_;
  const std::vector<InputFile> files_;
  const uint64_t chunk_bytes_;
  const uint64_t whole_file_limit_;
  size_t next_file_ = 0;
  bool done_ = false;

  // The file being cut, and where: the next chunk starts at chunk_begin_ (line chunk_line_), and
  // the scan has read up to pos_ (line line_).
  const InputFile* cutting_ = nullptr;
  LineScanner scanner_;
  uint64_t chunk_begin_ = 0;
  int64_t chunk_line_ = 1;
  uint64_t pos_ = 0;
  int64_t line_ = 1;
};

class ParallelReader final : public DocumentReader {
 public:
  ParallelReader(const FormatSpec& format, InputFiles files, ReaderOptions options, int threads)
      : format_(format),
        from_directory_(files.from_directory),
        options_(std::move(options)),
        threads_(threads),
        max_units_(4 * static_cast<size_t>(threads)),
        lister_(format, files.files, options_.chunk_bytes,
                std::max(options_.chunk_bytes, options_.max_bytes_in_flight / 4)) {
    for (const InputFile& file : files.files) {
      std::error_code error;
      const uintmax_t size = fs::file_size(file.path, error);
      if (!error) total_bytes_ += size;
    }
  }

  ~ParallelReader() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : parsers_) t.join();
  }

  absl::StatusOr<bool> Next(Document* doc) override {
    if (parsers_.empty()) {
      for (int t = 0; t < threads_; ++t) parsers_.emplace_back([this] { ParseLoop(); });
    }
    while (true) {
      if (current_ != nullptr) {
        TANDEM_ASSIGN_OR_RETURN(const bool found, NextInUnit(doc));
        if (found) return true;
        FinishUnit();
      }
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] {
        return (listed_all_ && window_.empty()) ||
               (!window_.empty() && (window_.front()->parsed || window_.front()->unit.streamed));
      });
      if (window_.empty()) return false;
      current_ = window_.front().get();
      next_doc_ = next_bad_ = 0;
    }
  }

  ReadProgress Progress() const override {
    uint64_t in_unit = 0;
    if (stream_ != nullptr) {
      in_unit = stream_->Progress().bytes_read;
    } else if (current_ != nullptr && !current_->docs.empty()) {
      in_unit = current_->unit.bytes * next_doc_ / current_->docs.size();
    }
    return {.bytes_read = finished_bytes_ + in_unit, .bytes_total = total_bytes_};
  }

 private:
  // A unit listed and not yet read to its end by Next.
  struct Slot {
    Unit unit;
    bool parsed = false;  // under mu_: docs, bad and status are final
    std::vector<Document> docs;
    std::vector<std::pair<size_t, absl::Status>> bad;  // each reported before docs[first]
    absl::Status status;                               // the error that stopped its reader
  };

  // The next document of current_, reporting the bad ones before it in order.
  absl::StatusOr<bool> NextInUnit(Document* doc) {
    Slot& slot = *current_;
    if (slot.unit.streamed) {
      if (stream_ == nullptr) {
        ReaderOptions own = options_;
        own.threads = 1;
        stream_ = OpenUnitReader(format_, from_directory_, slot.unit.file, std::move(own));
      }
      return stream_->Next(doc);
    }
    while (next_bad_ < slot.bad.size() && slot.bad[next_bad_].first <= next_doc_) {
      if (options_.on_bad_document) options_.on_bad_document(slot.bad[next_bad_].second);
      ++next_bad_;
    }
    if (next_doc_ < slot.docs.size()) {
      *doc = std::move(slot.docs[next_doc_++]);
      return true;
    }
    TANDEM_RETURN_IF_ERROR(slot.status);
    return false;
  }

  // Drops current_, read to its end, from the window and lets the parsers go on.
  void FinishUnit() {
    finished_bytes_ += current_->unit.bytes;
    stream_.reset();
    std::unique_ptr<Slot> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = std::move(window_.front());
      window_.pop_front();
      if (!done->unit.streamed) window_bytes_ -= done->unit.bytes;
    }
    work_.notify_all();
    current_ = nullptr;
  }

  // Under mu_: whether a parser may list one more unit.
  bool HasRoom() const {
    return window_.empty() || (window_.size() < max_units_ && window_bytes_ < max_bytes());
  }
  uint64_t max_bytes() const { return std::max<uint64_t>(options_.max_bytes_in_flight, 1); }

  void ParseLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_.wait(lock, [&] { return stop_ || listed_all_ || (!listing_ && HasRoom()); });
      if (stop_ || listed_all_) return;
      auto slot = std::make_unique<Slot>();
      // One parser lists at a time, without the lock, so Next and the other parsers go on.
      listing_ = true;
      lock.unlock();
      const bool listed = lister_.Next(&slot->unit);
      lock.lock();
      listing_ = false;
      work_.notify_all();
      if (!listed) {
        listed_all_ = true;
        ready_.notify_all();
        work_.notify_all();
        return;
      }
      Slot* const mine = slot.get();
      const bool to_parse = !mine->unit.streamed && mine->unit.error.ok();
      if (!mine->unit.error.ok()) {
        mine->status = mine->unit.error;
        mine->parsed = true;
        listed_all_ = true;  // reading stops at this unit; nothing after it is needed
      }
      if (to_parse) window_bytes_ += mine->unit.bytes;
      window_.push_back(std::move(slot));
      if (!to_parse) {
        ready_.notify_all();
        continue;
      }
      lock.unlock();
      Parse(*mine);
      lock.lock();
      mine->parsed = true;
      ready_.notify_all();
    }
  }

  // Runs the format's reader over the slot's unit; touches nothing shared.
  void Parse(Slot& slot) {
    ReaderOptions own;
    own.on_bad_document = [&slot](const absl::Status& s) {
      slot.bad.emplace_back(slot.docs.size(), s);
    };
    std::unique_ptr<DocumentReader> reader =
        OpenUnitReader(format_, from_directory_, slot.unit.file, std::move(own));
    while (!stop_.load(std::memory_order_relaxed)) {
      Document doc;
      absl::StatusOr<bool> more = reader->Next(&doc);
      if (!more.ok()) {
        slot.status = more.status();
        return;
      }
      if (!*more) return;
      slot.docs.push_back(std::move(doc));
    }
  }

  const FormatSpec& format_;
  const bool from_directory_;
  const ReaderOptions options_;
  const int threads_;
  const size_t max_units_;
  uint64_t total_bytes_ = 0;

  std::mutex mu_;
  std::condition_variable work_;   // parsers wait for room in the window, or the end
  std::condition_variable ready_;  // Next waits for the front unit
  // Written under mu_; read by Parse without it, only to stop early.
  std::atomic<bool> stop_{false};
  bool listed_all_ = false;                   // under mu_
  bool listing_ = false;                      // under mu_: a parser is in lister_.Next
  UnitLister lister_;                         // by the parser that set listing_
  std::deque<std::unique_ptr<Slot>> window_;  // under mu_; in reading order
  uint64_t window_bytes_ = 0;                 // under mu_; of the units parsed ahead
  std::vector<std::thread> parsers_;

  // Next's thread only. current_ is window_.front() while Next reads it; parsers leave a parsed or
  // streamed slot alone.
  Slot* current_ = nullptr;
  size_t next_doc_ = 0;
  size_t next_bad_ = 0;
  std::unique_ptr<DocumentReader> stream_;  // the reader of a streamed current_
  uint64_t finished_bytes_ = 0;
};

}  // namespace

std::unique_ptr<DocumentReader> MakeParallelReader(const FormatSpec& format, InputFiles files,
                                                   ReaderOptions options) {
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) return format.make(std::move(files), std::move(options));
  return std::make_unique<ParallelReader>(format, std::move(files), std::move(options), threads);
}

}  // namespace tandem::index_builder::internal
