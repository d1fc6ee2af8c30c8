// tandem-bench-build: index build throughput on real collections.
//
// Builds each collection with 1 thread and with all threads (the inverter's parse → invert → merge
// pipeline) and reports documents/s, MB/s of indexed text and bits per posting. Every built index
// is reopened and its lists verified before the figures count. Prints a table and writes JSON.
//
//   tandem-bench-build --json out.json --collection
//       wikipedia:wikiextractor:../shared/data/text/wikipedia,reuters:reuters:../shared/data/text/reuters21578
// (one argument: the collections are separated by commas, with no space)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "index/index.h"
#include "index_builder/document_reader.h"
#include "index_builder/inverter.h"
#include "tools/app.h"
#include "tools/bench_util.h"

ABSL_FLAG(std::vector<std::string>, collection, {},
          "NAME:FORMAT:PATH[,NAME:FORMAT:PATH...] (comma separated)");
ABSL_FLAG(std::string, codec, "pfor", "block codec");
ABSL_FLAG(std::string, work_dir, "/tmp/tandem-bench-build", "where the indexes are built");
ABSL_FLAG(bool, keep, false, "keep the built indexes (WORK_DIR/NAME) for the query benchmark");
ABSL_FLAG(std::string, json, "", "write results here");

int main(int argc, char** argv) {
  using namespace tandem;
  tools::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-bench-build",
       .usage = "tandem-bench-build: index build throughput on real collections.\n"
                "  tandem-bench-build --collection FORMAT:PATH ... [--json FILE]",
       .main_file = __FILE__});
  nlohmann::json out = {{"benchmark", "index_build"},
                        {"machine", tools::MachineInfo()},
                        {"codec", absl::GetFlag(FLAGS_codec)},
                        {"results", nlohmann::json::array()}};
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("%-10s %7s | %9s %10s %9s %9s | %9s\n", "collection", "threads", "docs", "postings",
              "docs/s", "MB/s", "bits/post");
  for (const std::string& spec : absl::GetFlag(FLAGS_collection)) {
    std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits(':', 2));
    if (parts.size() != 3) {
      std::fprintf(stderr, "tandem-bench-build: --collection wants NAME:FORMAT:PATH, got '%s'\n",
                   spec.c_str());
      return 2;
    }
    for (int threads : {1, cores}) {
      if (threads == cores && cores == 1) break;
      auto reader = index_builder::OpenDocumentReader(parts[1], parts[2], {});
      if (!reader.ok()) {
        std::fprintf(stderr, "tandem-bench-build: %s\n",
                     std::string(reader.status().message()).c_str());
        return 1;
      }
      const std::string dir = absl::StrCat(absl::GetFlag(FLAGS_work_dir), "/", parts[0]);
      index::IndexWriterOptions w;
      w.codec = absl::GetFlag(FLAGS_codec);
      w.source_format = parts[1];
      w.source_input = parts[2];
      index_builder::InverterOptions options;
      options.threads = threads;
      auto s = index_builder::BuildIndex(**reader, dir, w, options);
      if (!s.ok()) {
        std::fprintf(stderr, "tandem-bench-build: %s\n", std::string(s.status().message()).c_str());
        return 1;
      }
      auto idx = index::Index::Open(dir, {.verify_lists = true});
      if (!idx.ok() || (*idx)->num_docs() != s->documents) {
        std::fprintf(stderr, "tandem-bench-build: built index does not verify\n");
        return 1;
      }
      std::printf("%-10s %7d | %9llu %10llu %9.0f %9.2f | %9.2f\n", parts[0].c_str(), threads,
                  static_cast<unsigned long long>(s->documents),
                  static_cast<unsigned long long>(s->postings), s->documents / s->seconds,
                  s->text_bytes / 1e6 / s->seconds, s->bits_per_posting());
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
                                {"docs_per_second", s->documents / s->seconds},
                                {"mb_per_second", s->text_bytes / 1e6 / s->seconds},
                                {"bits_per_posting", s->bits_per_posting()}});
      if (!absl::GetFlag(FLAGS_keep) || threads != cores) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    }
  }
  if (!absl::GetFlag(FLAGS_json).empty())
    std::ofstream(absl::GetFlag(FLAGS_json)) << out.dump(2) << "\n";
  return 0;
}
