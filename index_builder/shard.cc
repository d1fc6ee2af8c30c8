#include "index_builder/shard.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/stale_files.h"
#include "base/status_macros.h"
#include "index/index_writer.h"

namespace tandem::index_builder {
namespace {

namespace fs = std::filesystem;

// Whether `dir` holds nothing but shard directories (shard-NNN, each with a manifest): the output
// of an earlier run, which a new one may replace as `tandem-index build` replaces an index.
bool HoldsShards(const fs::path& dir) {
  std::error_code ec;
  bool any = false;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 7 || name.compare(0, 6, "shard-") != 0 ||
        name.find_first_not_of("0123456789", 6) != std::string::npos ||
        !fs::exists(entry.path() / index::kManifestFile, ec)) {
      return false;
    }
    any = true;
  }
  return any && !ec;
}

// Shard `shard`: the source's documents [begin, end) as docIDs 0.., and every list's postings in
// that range, scored for the maxima with the collection's statistics (IndexWriterOptions::shard).
absl::Status WriteShard(const index::Index& source, uint32_t shard, uint32_t shards, uint32_t begin,
                        uint32_t end, const std::string& dir) {
  const index::IndexManifest& m = source.manifest();
  index::IndexWriterOptions options;
  options.codec = m.codec;
  options.analyzer = m.analyzer;
  options.bm25 = m.bm25;
  options.source_format = m.source_format;
  options.source_input = m.source_input;
  options.overwrite = false;
  options.shard = index::ShardManifest{
      .shard = shard,
      .shards = shards,
      .first_docid = begin,
      .collection_index_id = m.index_id,
      .collection_num_docs = source.num_docs(),
      // Exactly the float the source's norms use, so the shard's norms are the same floats.
      .collection_avg_doc_length = source.avg_doc_length(),
  };
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::IndexWriter> writer,
                          index::IndexWriter::Create(dir, options));
  std::vector<std::pair<std::string, std::string>> fields;
  for (uint32_t d = begin; d < end; ++d) {
    fields.clear();
    for (const auto& [name, value] : source.stored_fields(d)) fields.emplace_back(name, value);
    TANDEM_RETURN_IF_ERROR(
        writer->AddDocument(source.external_id(d), source.doc_length(d), fields));
  }
  std::vector<uint32_t> docids, freqs;
  uint32_t block_docids[index::kBlockSize], block_freqs[index::kBlockSize];
  for (uint64_t i = 0; i < source.num_terms(); ++i) {
    const index::TermInfo t = source.term_at(i);
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, source.postings(t));
    docids.clear();
    freqs.clear();
    // Only the blocks that overlap [begin, end): the skip table's last docIDs say which.
    for (uint32_t b = 0; b < list.num_blocks(); ++b) {
      if (list.last_docid(b) < begin) continue;
      if (b > 0 && list.last_docid(b - 1) + 1 >= end) break;
      TANDEM_RETURN_IF_ERROR(list.DecodeDocids(source.codec(), b, block_docids));
      TANDEM_RETURN_IF_ERROR(list.DecodeFreqs(source.codec(), b, block_freqs));
      for (uint32_t j = 0; j < list.block_postings(b); ++j) {
        if (block_docids[j] >= begin && block_docids[j] < end) {
          docids.push_back(block_docids[j] - begin);
          freqs.push_back(block_freqs[j]);
        }
      }
    }
    if (docids.empty()) continue;  // the term is not in this shard
    TANDEM_RETURN_IF_ERROR(writer->AddPostingList(t.term, docids, freqs, source.bm25_df(t)));
  }
  return writer->Finish();
}

}  // namespace

std::string ShardDirectoryName(uint32_t shard) { return absl::StrFormat("shard-%03d", shard); }

uint32_t ShardFirstDocid(uint32_t shard, uint32_t shards, uint32_t num_docs) {
  return shard * (num_docs / shards) + std::min(shard, num_docs % shards);
}

std::string ShardSummary::Describe() const {
  std::string out =
      absl::StrFormat("%d shards of %d documents:", directories.size(), first_docids.back());
  for (size_t i = 0; i < directories.size(); ++i) {
    absl::StrAppendFormat(&out, "\n  %s  docIDs %d..%d (%d documents)", directories[i],
                          first_docids[i], first_docids[i + 1] - 1,
                          first_docids[i + 1] - first_docids[i]);
  }
  return out;
}

absl::StatusOr<ShardSummary> ShardIndex(const index::Index& source, const std::string& out,
                                        const ShardOptions& options) {
  const uint32_t n = source.num_docs();
  const uint32_t shards = options.shards;
  if (shards == 0) return absl::InvalidArgumentError("--shards must be at least 1");
  if (const index::ShardManifest* s = source.shard()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s' is already a shard (shard %d of %d of index %s); shard the collection's index "
        "instead",
        source.directory(), s->shard, s->shards, s->collection_index_id));
  }
  if (shards > n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot cut %d documents into %d shards: every shard needs a document "
                        "(--shards at most %d)",
                        n, shards, n));
  }

  std::error_code ec;
  fs::path target = fs::absolute(fs::path(out), ec).lexically_normal();
  if (ec) return absl::InvalidArgumentError(absl::StrCat("bad output path '", out, "'"));
  if (target.filename().empty()) target = target.parent_path();
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) {
      return absl::AlreadyExistsError(
          absl::StrCat("output '", target.string(), "' exists and is not a directory"));
    }
    if (!fs::is_empty(target, ec) && !HoldsShards(target)) {
      return absl::AlreadyExistsError(
          absl::StrCat("output directory '", target.string(),
                       "' is not empty and holds no shards; refusing to replace it"));
    }
  }
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create '", target.parent_path().string(), "': ", ec.message()));
  }
  // Leftovers of runs that were killed (their process is gone) go first.
  const std::string name = target.filename().string();
  base::RemoveStaleSiblings(target.parent_path().string(), name + ".tmp-");
  base::RemoveStaleSiblings(target.parent_path().string(), name + ".old-");
  const std::string tmp = target.string() + base::PidTaggedSuffix(".tmp-");
  fs::create_directory(tmp, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create '", tmp, "': ", ec.message()));
  // Removes the temporary directory unless it was put in place.
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      if (!dir.empty()) fs::remove_all(dir, ignored);
    }
  } cleanup{tmp};

  ShardSummary summary;
  for (uint32_t i = 0; i <= shards; ++i)
    summary.first_docids.push_back(ShardFirstDocid(i, shards, n));
  for (uint32_t i = 0; i < shards; ++i) summary.directories.push_back(ShardDirectoryName(i));
  std::vector<absl::Status> status(shards);
  std::atomic<uint32_t> next{0};
  const auto work = [&] {
    for (uint32_t i = next++; i < shards; i = next++) {
      status[i] = WriteShard(source, i, shards, summary.first_docids[i],
                             summary.first_docids[i + 1], tmp + "/" + summary.directories[i]);
    }
  };
  const uint32_t threads =
      std::min(shards, options.threads > 0 ? static_cast<uint32_t>(options.threads)
                                           : std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (uint32_t i = 0; i < shards; ++i) {
    if (!status[i].ok()) {
      return absl::Status(status[i].code(),
                          absl::StrCat(summary.directories[i], ": ", status[i].message()));
    }
  }
  TANDEM_RETURN_IF_ERROR(index::InstallDirectory(tmp, target.string()));
  cleanup.dir.clear();
  return summary;
}

}  // namespace tandem::index_builder
