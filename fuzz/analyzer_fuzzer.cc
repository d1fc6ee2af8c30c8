// Feeds arbitrary bytes, invalid UTF-8 included, to Analyzer::Analyze and Analyzer::Normalize under
// every configuration the analyzer accepts: tokenizer standard or alnum, possessive filter on or
// off, lower-casing on or off, stop words lucene or none, and stemmer none or any of libstemmer's
// algorithms. Input: configuration (1 byte: bit 0 tokenizer, bit 1 possessive, bit 2 lowercase, bit
// 3 stop words), stemmer (1 byte, modulo 1 + the number of algorithms; 0 is none), then the text.
//
// Checks, besides no crash and no read out of bounds:
//   - every term is non-empty, valid UTF-8 (invalid bytes separate terms) and no longer than a
//     stemmed 255-byte token can be;
//   - analyzing the same text again (with the state the first call returned to the pool) gives
//     the same terms;
//   - without a stemmer: lower-cased terms hold no ASCII capitals, the alnum tokenizer's terms are
//     ASCII letters and digits only, and no term is a stop word when stop words are dropped.
#include <libstemmer.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "index/analyzer.h"

namespace {

using tandem::index::Analyzer;
using tandem::index::AnalyzerConfig;

const std::vector<std::string>& Stemmers() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>{"none"};
    for (const char** p = sb_stemmer_list(); *p != nullptr; ++p) v->emplace_back(*p);
    return v;
  }();
  return *names;
}

// One analyzer per configuration, created at first use.
const Analyzer& AnalyzerFor(uint8_t bits, size_t stemmer) {
  static auto* analyzers = new std::map<std::pair<uint8_t, size_t>, std::unique_ptr<Analyzer>>;
  std::unique_ptr<Analyzer>& slot = (*analyzers)[{bits, stemmer}];
  if (slot == nullptr) {
    AnalyzerConfig config;
    config.tokenizer = bits & 1 ? "alnum" : "standard";
    config.possessive = bits & 2;
    config.lowercase = bits & 4;
    config.stopwords = bits & 8 ? "none" : "lucene";
    config.stemmer = Stemmers()[stemmer];
    absl::StatusOr<std::unique_ptr<Analyzer>> created = Analyzer::Create(config);
    TANDEM_FUZZ_CHECK(created.ok());
    slot = *std::move(created);
  }
  return *slot;
}

bool IsAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::Input input(data, size);
  const uint8_t bits = input.Byte() & 0xF;
  const size_t stemmer = input.Byte() % Stemmers().size();
  const tandem::fuzz::Bytes text(input.rest());
  const Analyzer& analyzer = AnalyzerFor(bits, stemmer);
  const AnalyzerConfig& config = analyzer.config();

  std::vector<std::string> terms;
  analyzer.Analyze(text.view(), &terms);
  const auto& stop_words = tandem::index::LuceneEnglishStopWords();
  for (const std::string& term : terms) {
    TANDEM_FUZZ_CHECK(!term.empty());
    TANDEM_FUZZ_CHECK(tandem::fuzz::IsValidUtf8(term));
    if (config.stemmer != "none") continue;
    // Lower-casing can lengthen a character (U+023A, 2 bytes, becomes U+2C65, 3 bytes).
    TANDEM_FUZZ_CHECK(term.size() <= (config.lowercase ? 255 * 3 / 2 : 255));
    if (config.lowercase) {
      TANDEM_FUZZ_CHECK(
          std::none_of(term.begin(), term.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
    }
    if (config.tokenizer == "alnum") {
      TANDEM_FUZZ_CHECK(std::all_of(term.begin(), term.end(), IsAsciiAlnum));
    }
    if (config.stopwords == "lucene") {
      TANDEM_FUZZ_CHECK(std::find(stop_words.begin(), stop_words.end(), term) == stop_words.end());
    }
  }
  std::vector<std::string> again;
  analyzer.Analyze(text.view(), &again);
  TANDEM_FUZZ_CHECK(again == terms);

  // The chain after the tokenizer, on the whole input as one token.
  std::string term;
  if (analyzer.Normalize(text.view(), &term)) TANDEM_FUZZ_CHECK(!term.empty());
  return 0;
}
