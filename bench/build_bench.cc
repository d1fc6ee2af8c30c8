// tandem-bench-build: index build throughput on real collections.
//
// Builds each collection with 1 thread and with all threads, or with the --threads counts (parsing
// in parallel by file and by chunk, then the inverter's invert → merge pipeline), and reports
// documents/s, MB/s of indexed text, bits per posting and the speed-up over the first thread
// count. Every built index is reopened and its lists verified, and every build's postings.bin,
// lexicon.bin and documents.bin must equal the first one's byte for byte, before the figures
// count. The input is read once before the first build, so that every build reads it from memory;
// with --repeat N each thread count is built N times and the fastest build counts.
// Prints a table, with each build's phases (inverting, merging, finishing), and writes JSON.
//
//   tandem-bench-build --json out.json --collection
//       wikipedia:wikiextractor:../shared/data/text/wikipedia,reuters:reuters:../shared/data/text/reuters21578
// (one argument: the collections are separated by commas, with no space)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "index/index.h"
#include "index_builder/document_reader.h"
#include "index_builder/inverter.h"

ABSL_FLAG(std::vector<std::string>, collection, {},
          "NAME:FORMAT:PATH[,NAME:FORMAT:PATH...] (comma separated)");
ABSL_FLAG(std::string, codec, "pfor", "block codec");
ABSL_FLAG(std::string, work_dir, "/tmp/tandem-bench-build", "where the indexes are built");
ABSL_FLAG(bool, keep, false, "keep the built indexes (WORK_DIR/NAME) for the query benchmark");
ABSL_FLAG(std::string, json, "", "write results here");
ABSL_FLAG(std::vector<std::string>, threads, {},
          "thread counts to build with, comma separated (default: 1 and all cores)");
ABSL_FLAG(int, parse_chunk_kb, 256, "chunk size for parsing large files in parallel");
ABSL_FLAG(int, repeat, 1,
          "builds per thread count; the fastest counts (on a machine whose speed varies, the "
          "one least slowed)");

namespace {

// Reads every file under `path` once, so that the first build does not pay for the disk alone.
void WarmPageCache(const std::string& path) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
      if (e.is_regular_file(ec)) files.push_back(e.path());
    }
  } else {
    files.push_back(path);
  }
  std::vector<char> buffer(1 << 20);
  for (const std::filesystem::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    }
  }
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem;
  base::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-bench-build",
       .usage = "tandem-bench-build: index build throughput on real collections.\n"
                "  tandem-bench-build --collection FORMAT:PATH ... [--json FILE]",
       .main_file = __FILE__});
  nlohmann::json out = {{"benchmark", "index_build"},
                        {"machine", base::MachineInfo()},
                        {"codec", absl::GetFlag(FLAGS_codec)},
                        {"results", nlohmann::json::array()}};
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> thread_counts;
  for (const std::string& t : absl::GetFlag(FLAGS_threads)) {
    int n = 0;
    if (!absl::SimpleAtoi(t, &n) || n < 1) {
      std::fprintf(stderr, "tandem-bench-build: --threads wants counts >= 1, got '%s'\n",
                   t.c_str());
      return 2;
    }
    thread_counts.push_back(n);
  }
  if (thread_counts.empty()) thread_counts = {1, cores};
  const int repeat = absl::GetFlag(FLAGS_repeat);
  if (repeat < 1) {
    std::fprintf(stderr, "tandem-bench-build: --repeat wants at least 1, got %d\n", repeat);
    return 2;
  }
  if (thread_counts.size() == 2 && cores == 1) thread_counts.pop_back();
  std::printf("%-10s %7s | %9s %10s %9s %9s | %9s %8s | %8s %8s %8s\n", "collection", "threads",
              "docs", "postings", "docs/s", "MB/s", "bits/post", "speed-up", "invert s", "merge s",
              "finish s");
  for (const std::string& spec : absl::GetFlag(FLAGS_collection)) {
    std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits(':', 2));
    if (parts.size() != 3) {
      std::fprintf(stderr, "tandem-bench-build: --collection wants NAME:FORMAT:PATH, got '%s'\n",
                   spec.c_str());
      return 2;
    }
    WarmPageCache(parts[2]);
    double first_seconds = 0;
    std::vector<std::string> first_files;
    for (const int threads : thread_counts) {
      index_builder::ReaderOptions reader_options;
      reader_options.threads = threads;
      reader_options.chunk_bytes = static_cast<uint64_t>(absl::GetFlag(FLAGS_parse_chunk_kb)) << 10;
      const std::string dir = absl::StrCat(absl::GetFlag(FLAGS_work_dir), "/", parts[0]);
      // The fastest of --repeat builds; every one is verified and compared with the first build.
      std::optional<index_builder::BuildSummary> s;
      std::vector<double> all_seconds;
      for (int rep = 0; rep < repeat; ++rep) {
        auto reader = index_builder::OpenDocumentReader(parts[1], parts[2], reader_options);
        if (!reader.ok()) {
          std::fprintf(stderr, "tandem-bench-build: %s\n",
                       std::string(reader.status().message()).c_str());
          return 1;
        }
        index::IndexWriterOptions w;
        w.codec = absl::GetFlag(FLAGS_codec);
        w.source_format = parts[1];
        w.source_input = parts[2];
        index_builder::InverterOptions options;
        options.threads = threads;
        auto built = index_builder::BuildIndex(**reader, dir, w, options);
        if (!built.ok()) {
          std::fprintf(stderr, "tandem-bench-build: %s\n",
                       std::string(built.status().message()).c_str());
          return 1;
        }
        auto idx = index::Index::Open(dir, {.verify_lists = true});
        if (!idx.ok() || (*idx)->num_docs() != built->documents) {
          std::fprintf(stderr, "tandem-bench-build: built index does not verify\n");
          return 1;
        }
        std::vector<std::string> files;
        for (const char* f : {index::kPostingsFile, index::kLexiconFile, index::kDocumentsFile}) {
          files.push_back(FileBytes(dir + "/" + f));
        }
        if (first_files.empty()) {
          first_files = std::move(files);
        } else if (files != first_files) {
          std::fprintf(stderr,
                       "tandem-bench-build: %s with %d threads differs from the first build\n",
                       parts[0].c_str(), threads);
          return 1;
        }
        all_seconds.push_back(built->seconds);
        if (!s || built->seconds < s->seconds) s = *std::move(built);
      }
      if (first_seconds == 0) first_seconds = s->seconds;
      const double speedup = first_seconds / s->seconds;
      std::printf("%-10s %7d | %9llu %10llu %9.0f %9.2f | %9.2f %7.2fx | %8.3f %8.3f %8.3f\n",
                  parts[0].c_str(), threads, static_cast<unsigned long long>(s->documents),
                  static_cast<unsigned long long>(s->postings), s->documents / s->seconds,
                  s->text_bytes / 1e6 / s->seconds, s->bits_per_posting(), speedup,
                  s->invert_seconds, s->merge_seconds, s->finish_seconds);
      out["results"].push_back({{"collection", parts[0]},
                                {"format", parts[1]},
                                {"threads", threads},
                                {"documents", s->documents},
                                {"terms", s->terms},
                                {"postings", s->postings},
                                {"text_bytes", s->text_bytes},
                                {"index_bytes", s->index_bytes},
                                {"postings_bytes", s->postings_bytes},
                                {"seconds", s->seconds},
                                {"invert_seconds", s->invert_seconds},
                                {"merge_seconds", s->merge_seconds},
                                {"finish_seconds", s->finish_seconds},
                                {"docs_per_second", s->documents / s->seconds},
                                {"mb_per_second", s->text_bytes / 1e6 / s->seconds},
                                {"bits_per_posting", s->bits_per_posting()},
                                {"speedup_over_first", speedup},
                                {"all_seconds", all_seconds},
                                {"parse_chunk_bytes", reader_options.chunk_bytes}});
      if (!absl::GetFlag(FLAGS_keep) || threads != thread_counts.back()) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    }
  }
  if (!absl::GetFlag(FLAGS_json).empty())
    std::ofstream(absl::GetFlag(FLAGS_json)) << out.dump(2) << "\n";
  return 0;
}
