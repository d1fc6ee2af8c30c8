// tandem-fuzz-seeds: writes the seed corpus of every fuzzer in fuzz/ (fuzz/corpus/NAME/), a few
// valid inputs per target: the files and payloads of small real indexes in every codec (the tiny
// corpus of tests/data/tiny and fuzz/fixed_index.h's collection), their GPU layouts, posting lists,
// encoded blocks of every codec, analyzer texts, query files, filters, and documents of every
// reader format (tests/data/readers and a few edge cases). Deterministic: the manifests' random
// index id, build time and builder are fixed, so rerunning it rewrites the same bytes.
//
//   build-fuzz/fuzz/tandem-fuzz-seeds fuzz/corpus     # from the repository root
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/temp_dir.h"
#include "fuzz/fixed_index.h"
#include "fuzz/index_input.h"
#include "gpu/layouts/stored_layouts.h"
#include "index/analyzer.h"
#include "index/block_codec.h"
#include "index/codec_test_util.h"
#include "index/file_format.h"
#include "index/index.h"
#include "index/index_writer.h"
#include "index_builder/document_reader.h"
#include "index_builder/index_export.h"

namespace tandem::fuzz {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "tandem-fuzz-seeds: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Fail(absl::StrCat(what, ": ", status.ToString()));
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot read " + path.string());
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class Corpus {
 public:
  explicit Corpus(fs::path root) : root_(std::move(root)) {}

  void Add(const std::string& target, const std::string& name, absl::string_view bytes) {
    const fs::path dir = root_ / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) Fail("cannot write " + (dir / name).string());
    ++written_;
  }
  int written() const { return written_; }

 private:
  fs::path root_;
  int written_ = 0;
};

std::string U32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// Rewrites an index's manifest with a fixed id, build time and builder (so seeds do not change
// from run to run) and returns the four files' whole bytes, keyed by file name.
std::map<std::string, std::string> FixedFiles(const std::string& dir) {
  const std::string manifest_path = dir + "/" + index::kManifestFile;
  absl::StatusOr<index::MappedFile> mapped =
      index::MappedFile::Open(manifest_path, index::FileKind::kManifest);
  Check(mapped.status(), manifest_path);
  absl::StatusOr<index::IndexManifest> manifest = index::IndexManifest::FromJson(mapped->payload());
  Check(manifest.status(), manifest_path);
  *mapped = index::MappedFile();
  manifest->index_id = std::string(32, '0');
  manifest->build_time = "2026-01-01T00:00:00Z";
  manifest->builder = "tandem-fuzz-seeds";
  auto writer = index::FileWriter::Create(manifest_path, index::FileKind::kManifest);
  Check(writer.status(), manifest_path);
  Check((*writer)->Append(manifest->ToJson()), manifest_path);
  Check((*writer)->Finish(), manifest_path);
  std::map<std::string, std::string> files;
  for (const char* name :
       {index::kManifestFile, index::kLexiconFile, index::kPostingsFile, index::kDocumentsFile}) {
    files[name] = ReadFile(fs::path(dir) / name);
  }
  return files;
}

absl::string_view Payload(const std::string& file) {
  return absl::string_view(file).substr(index::kHeaderBytes,
                                        file.size() - index::kHeaderBytes - index::kFooterBytes);
}

// The first documents of the tiny corpus of tests/data/tiny, analyzed with the default analyzer, as
// an index in `codec`: real words, a few kilobytes.
constexpr uint32_t kTinyDocuments = 12;

void BuildTinyIndex(const std::string& codec, const std::string& dir) {
  auto analyzer = index::Analyzer::Create(index::AnalyzerConfig{});
  Check(analyzer.status(), "analyzer");
  auto reader = index_builder::OpenDocumentReader("beir", "tests/data/tiny/corpus.jsonl", {});
  Check(reader.status(), "tests/data/tiny/corpus.jsonl (run from the repository root)");
  index::IndexWriterOptions options;
  options.codec = codec;
  options.source_format = "beir";
  options.source_input = "corpus.jsonl";
  auto writer = index::IndexWriter::Create(dir, options);
  Check(writer.status(), dir);
  std::map<std::string, std::map<uint32_t, uint32_t>> postings;
  index_builder::Document doc;
  for (uint32_t d = 0; d < kTinyDocuments; ++d) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    Check(more.status(), "tiny corpus");
    if (!*more) break;
    std::vector<std::string> terms;
    (*analyzer)->Analyze(doc.text, &terms);
    for (const std::string& t : terms) ++postings[t][d];
    Check((*writer)->AddDocument(doc.external_id, static_cast<uint32_t>(terms.size()), doc.fields),
          "document");
  }
  for (const auto& [term, list] : postings) {
    std::vector<uint32_t> docids, freqs;
    for (const auto& [d, f] : list) {
      docids.push_back(d);
      freqs.push_back(f);
    }
    Check((*writer)->AddPostingList(term, docids, freqs), term);
  }
  Check((*writer)->Finish(), dir);
}

void IndexSeeds(Corpus& corpus, const std::string& scratch) {
  for (const std::string& codec : index::BlockCodecNames()) {
    for (const bool tiny : {true, false}) {
      const std::string name = absl::StrCat(tiny ? "tiny-" : "fixed-", codec);
      const std::string dir = absl::StrCat(scratch, "/", name);
      if (tiny) {
        BuildTinyIndex(codec, dir);
      } else {
        Check(BuildFixedIndex(codec, dir), dir);
      }
      std::map<std::string, std::string> files = FixedFiles(dir);
      corpus.Add(
          "index_reader", name,
          JoinPayloads({Payload(files[index::kManifestFile]), Payload(files[index::kLexiconFile]),
                        Payload(files[index::kPostingsFile]),
                        Payload(files[index::kDocumentsFile])}));
      if (codec == "pfor") {
        for (const auto& [file, bytes] : files) corpus.Add("index_frame", name + "-" + file, bytes);
      }

      // Posting lists: the longest (several blocks), a middle one and the shortest.
      absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(dir);
      Check(idx.status(), dir);
      const index::Index& index = **idx;
      uint64_t longest = 0, shortest = 0;
      for (uint64_t t = 0; t < index.num_terms(); ++t) {
        if (index.term_at(t).df > index.term_at(longest).df) longest = t;
        if (index.term_at(t).df < index.term_at(shortest).df) shortest = t;
      }
      uint8_t codec_byte = 0;
      while (index::BlockCodecNames()[codec_byte] != codec) ++codec_byte;
      for (const uint64_t t : {longest, index.num_terms() / 2, shortest}) {
        const index::TermInfo term = index.term_at(t);
        const std::string list = std::string(
            Payload(files[index::kPostingsFile]).substr(term.list_offset, term.list_bytes));
        corpus.Add(
            "posting_list", absl::StrCat(name, "-", term.term),
            absl::StrCat(std::string(1, static_cast<char>(codec_byte)), U32(index.num_docs()),
                         U32(term.df), U32(static_cast<uint32_t>(term.cf)),
                         U32(static_cast<uint32_t>(term.cf >> 32)), list));
      }

      // GPU layouts of the fuzzer's own fixed indexes.
      for (size_t which = 0; which < kFixedIndexCodecs.size(); ++which) {
        if (tiny || codec != kFixedIndexCodecs[which]) continue;
        for (const uint32_t block_size : {128u, 512u}) {
          const std::string path = absl::StrCat(dir, "/", gpu::kStoredLayoutsFile);
          Check(gpu::WriteGpuLayouts(index, {.pfor_block_size = block_size}, path, 1), path);
          const std::string file = ReadFile(path);
          corpus.Add("gpu_layouts", absl::StrCat(name, "-block", block_size),
                     absl::StrCat(std::string(1, static_cast<char>(which)), Payload(file)));
          if (block_size == 128) corpus.Add("index_frame", name + "-gpu_layouts.bin", file);
        }
      }
    }
  }
}

void CodecSeeds(Corpus& corpus) {
  const std::vector<std::string> names = index::BlockCodecNames();
  std::mt19937_64 rng(42);
  for (size_t c = 0; c < names.size(); ++c) {
    const index::BlockCodec& codec = *index::GetBlockCodec(names[c]);
    int distribution = 0;
    for (const index::Distribution d : index::kAllDistributions) {
      for (const size_t n : {size_t{1}, size_t{7}, index::kBlockSize}) {
        std::vector<uint32_t> values = index::RandomValues(d, n, rng);
        const uint32_t param = codec.ChooseParameter(values.data(), n);
        std::string block;
        codec.Encode(values.data(), n, param, &block);
        const std::string name = absl::StrCat(names[c], "-d", distribution, "-n", n);
        corpus.Add("codec_decode", name,
                   absl::StrCat(std::string(1, static_cast<char>(c)),
                                std::string(1, static_cast<char>(n)), U32(param), block));
        if (n == 1 || block.size() > 600) continue;
        std::string values_bytes;
        for (uint32_t v : values) values_bytes += U32(v);
        corpus.Add("codec_roundtrip", name,
                   absl::StrCat(std::string(1, static_cast<char>(c)),
                                std::string(1, static_cast<char>(n - 1)), std::string(1, '\0'),
                                std::string(1, static_cast<char>(param)), values_bytes));
      }
      ++distribution;
    }
  }
}

void TextSeeds(Corpus& corpus) {
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"english", "The dog's bark woke the neighbours' cats; they weren't running."},
      {"possessives", "O'Neil\xE2\x80\x99s car and JAMES'S house, the CHILDREN\xEF\xBC\x87S toys"},
      {"numbers", "3.14159 1,000,000 v2.0 2026-01-01 10:45pm U.S.A. e-mail"},
      {"unicode",
       "Caf\xC3\xA9 na\xC3\xAFve \xC3\x9C"
       "ber Stra\xC3\x9F"
       "e \xE6\x97\xA5\xE6\x9C\xAC"
       "\xE8\xAA\x9E \xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0 \xF0\x9F\x98\x80"},
      {"invalid-utf8", "valid \xC3 broken \xE2\x82 truncated \xFF\xFE bytes \xED\xA0\x80 end"},
      {"long-token",
       std::string(300, 'a') + " " + std::string(200, 'x') + "\xC3\xA9" + std::string(100, 'y')},
      {"stop-words", "the and of a an to in is it that this these there will with"},
      {"capitals", "\xC8\xBA\xC8\xBA HELLO World \xC4\xB0stanbul \xCE\xA3\xCE\x9F\xCE\xA6"},
  };
  // Configurations: default, alnum, no possessive or lower-casing, stop words kept; stemmers none
  // (0), and the first few of libstemmer's list.
  const std::vector<std::pair<uint8_t, uint8_t>> configs = {{0, 0}, {0, 1}, {1, 0}, {6, 2},
                                                            {8, 3}, {9, 5}, {15, 7}};
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto& [name, text] = texts[i];
    const auto [bits, stemmer] = configs[i % configs.size()];
    corpus.Add("analyzer", name,
               absl::StrCat(std::string(1, static_cast<char>(bits)),
                            std::string(1, static_cast<char>(stemmer)), text));
  }

  corpus.Add("query_parser", "tsv", ReadFile("tests/data/tiny/queries.tsv"));
  corpus.Add("query_parser", "plain", ReadFile("tests/data/readers/lines/queries.txt"));
  corpus.Add("query_parser", "colon", "701:U.S. oil industry history\n702:pearl farming\n");
  corpus.Add("query_parser", "colon-priority",
             "20001:1:obama family tree\n20002:2:french lick resort and casino\n");
  corpus.Add("query_parser", "mixed-priorities", "1:dogs\n20001:1:obama family tree\n3:cats\n");
  corpus.Add("query_parser", "bom-crlf-latin1",
             "\xEF\xBB\xBF"
             "1\tcaf\xE9 au lait\r\n\r\n2\tpaula deen's brother\r\n");
  corpus.Add("query_parser", "mode", "and_or");

  corpus.Add("filter", "and", "year >= 2002 AND domain:a.com");
  corpus.Add("filter", "or-in-not",
             "label = spam OR (year = 1998..2001 AND NOT domain IN (a.com, \"c d\"))");
  corpus.Add("filter", "ranges", "length < 200 AND length != 0..99 OR length = 500 OR year > 2004");
  corpus.Add("filter", "keywords-case", "not domain = \"or\" and Label:ham or year != 2003");
  corpus.Add("filter", "cut-bucket", "length >= 150");
  corpus.Add("filter", "nested", "((year = .. AND NOT (label = ham OR label = spam)))");
  corpus.Add("filter", "errors", "domain = \"a\\\"b\\\\c\" OR lang IN (x, y..z)");
}

void ReaderSeeds(Corpus& corpus) {
  const fs::path data = "tests/data/readers";
  const std::vector<std::pair<std::string, fs::path>> files = {
      {"reader_beir", data / "beir/corpus.jsonl"},
      {"reader_trec", data / "trec/fr940104.trec"},
      {"reader_smart", data / "smart/cran.all.3"},
      {"reader_smart", data / "smart/MED.ALL"},
      {"reader_npl", data / "npl/doc-text"},
      {"reader_reuters", data / "reuters/reut2-000.sgm"},
      {"reader_wikiextractor", data / "wikiextractor/AA/wiki_00"},
      {"reader_wikiextractor", data / "wikiextractor/AA/wiki_01"},
      {"reader_email", data / "email/plain.eml"},
      {"reader_email", data / "email/sub/multipart.eml"},
      {"reader_email", data / "email/no-separator.eml"},
      {"reader_email", data / "email-json/spam-1/00001.0123456789abcdef0123456789abcdef.txt"},
      {"reader_email_json", data / "email-json/all.json"},
      {"reader_email_json", data / "email-json/spam-1/00001.0123456789abcdef0123456789abcdef.json"},
      {"reader_lines", data / "lines/queries.txt"},
  };
  for (const auto& [target, path] : files) {
    corpus.Add(target, path.filename().string(), ReadFile(path));
  }
  // Edge cases the test files do not show.
  corpus.Add("reader_beir", "edge-cases",
             "\xEF\xBB\xBF{\"_id\": 17, \"title\": null, \"text\": \"caf\xE9 \\u00e9 \\u0000\"}\n"
             "\n[1, 2]\n{\"_id\": \"\"}\n{\"_id\": \"x\", \"text\": 3.5}\nnot json\n");
  corpus.Add("reader_trec", "edge-cases",
             "<DOC>\n<DOCNO> A-1 </DOCNO>\n<HEADLINE>Rock &amp; roll &#x2014; &eacute;</HEADLINE>\n"
             "<TEXT>\n<P>First.</P>\n<F P=102>Second</F>\n</TEXT>\n</DOC>\n"
             "<DOC>\n<DOCNO>B-2</DOCNO>\n<DOCHDR>http://x/</DOCHDR>\n<html><body>web "
             "page</body></html>\n</DOC>\n<DOC>\n<TEXT>no docno</TEXT>\n</DOC>\n<DOC>\n<DOCNO>C"
             "</DOCNO> unclosed\n<DOC><DOCNO>D</DOCNO></DOC> trailing\n");
  corpus.Add("reader_reuters", "edge-cases",
             "<REUTERS TOPICS=\"YES\" NEWID=\"5\">\n<TEXT>&#2;\n<TITLE>GRAIN &lt;UP&gt;</TITLE>\n"
             "<BODY>Wheat rose \xB0 today.\n&#3;</BODY></TEXT>\n</REUTERS>\n"
             "<REUTERS NEWID=\"6\"><TEXT TYPE=\"BRIEF\"><TITLE>brief</TITLE></TEXT></REUTERS>\n"
             "<REUTERS>no id</REUTERS>\n");
  corpus.Add("reader_wikiextractor", "edge-cases",
             "<doc id=\"12\" url=\"https://en.wikipedia.org/wiki?curid=12\" title=\"Anarchism\">\n"
             "Anarchism\n\nAnarchism is a &quot;political&quot; philosophy.\n</doc>\n"
             "<doc title=\"no id\">text</doc>\n<doc id=\"13\">\nunclosed\n");
  corpus.Add("reader_smart", "edge-cases",
             ".I 1\n.T\nexperimental investigation\n.A\nbrenckman,m.\n.B\nj. ae. scs. 25, 1958\n"
             ".W\nan experimental study of a wing in a propeller slipstream.\n.I 2\n.W\n"
             "\n.I x\n.T\nbad number\n.X\n1 2 3\n");
  corpus.Add("reader_npl", "edge-cases",
             "1\ncompact memories have flexible capacities\n   /\n2\n\n   /\nx\nnot a number\n"
             "   /\n3\nno terminator");
  corpus.Add("reader_email", "encodings",
             "From someone@example.com Sat Jan  1 00:00:00 2026\n"
             "Subject: =?UTF-8?B?Q2Fmw6k=?= =?ISO-8859-1?Q?na=EFve_text?=\n"
             "Content-Type: multipart/alternative; boundary=\"b1\"\n\n--b1\n"
             "Content-Type: text/html\nContent-Transfer-Encoding: quoted-printable\n\n"
             "<p>Hello=20<b>world</b>=\n!</p>\n--b1\nContent-Type: text/plain; charset=utf-8\n"
             "Content-Transfer-Encoding: base64\n\nSGVsbG8gd29ybGQh\n--b1--\n");
  corpus.Add("reader_email", "nested",
             "Subject: fwd\nContent-Type: multipart/mixed; boundary=x\n\n--x\n"
             "Content-Type: message/rfc822\n\nSubject: inner\n\ninner body\n--x\n"
             "Content-Type: application/pdf\nContent-Disposition: attachment\n\nJVBERi0=\n--x--\n");
  corpus.Add("reader_email_json", "array",
             "[{\"id\": 7, \"group\": \"ham\", \"text\": \"Subject: hi\\n\\nbody\"},"
             " {\"text\": 5}, \"x\", {\"id\": \"a\", \"text\": \"no header\"}]");
  corpus.Add("reader_lines", "edge-cases",
             "first line\n\n   \r\nsecond \xE9t\xE9\r\n\x01\x7F third");
}

// CIFF files: the tiny index and a small one with an empty document, exported (with a fixed
// description in the header, so the bytes do not change from run to run).
void CiffSeeds(Corpus& corpus, const std::string& scratch) {
  const std::string dir = scratch + "/ciff-tiny";
  BuildTinyIndex("pfor", dir);
  absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(dir);
  Check(idx.status(), dir);
  const std::string path = scratch + "/tiny.ciff";
  Check(index_builder::ExportCiff(**idx, path, "tiny corpus, tandem-fuzz-seeds"), path);
  corpus.Add("ciff_reader", "tiny", ReadFile(path));
  Check(testing::BuildIndex({{"b", "a", "b"}, {}, {"c"}}, scratch + "/ciff-small", "pfor"),
        "small index");
  idx = index::Index::Open(scratch + "/ciff-small");
  Check(idx.status(), "small index");
  Check(index_builder::ExportCiff(**idx, path, "small"), path);
  corpus.Add("ciff_reader", "small", ReadFile(path));
}

}  // namespace
}  // namespace tandem::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR   (from the repository root)\n", argv[0]);
    return 2;
  }
  tandem::fuzz::Corpus corpus(argv[1]);
  tandem::base::TempDir scratch;
  tandem::fuzz::IndexSeeds(corpus, scratch.path());
  tandem::fuzz::CodecSeeds(corpus);
  tandem::fuzz::TextSeeds(corpus);
  tandem::fuzz::ReaderSeeds(corpus);
  tandem::fuzz::CiffSeeds(corpus, scratch.path());
  std::printf("tandem-fuzz-seeds: %d files under %s\n", corpus.written(), argv[1]);
  return 0;
}
