// File: analyzer.h
//
// Text → terms, identical for documents at build time and for queries at search time: the index
// stores its AnalyzerConfig and the server analyzes query text with it.
//
// The default reproduces Anserini's DefaultEnglishAnalyzer (Lucene's EnglishAnalyzer chain):
//   StandardTokenizer (Unicode UAX #29 word boundaries, here through ICU's word BreakIterator)
//   → EnglishPossessiveFilter ("dog's" → "dog") → LowerCaseFilter → StopFilter (Lucene's 33 English
//   stop words) → PorterStemFilter (libstemmer's "porter", the original Porter algorithm).
// Synthetic collections record tokenizer "alnum" (lower-cased [a-z0-9]+ runs) and no stemmer.
//
//   TANDEM_ASSIGN_OR_RETURN(auto analyzer, Analyzer::Create(AnalyzerConfig{}));
//   std::vector<std::string> terms;
//   analyzer->Analyze("The dog's bark", &terms);  // {"dog", "bark"}
//
// Analyze is thread-safe; each call borrows tokenizer and stemmer state from a small pool.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::index {

struct AnalyzerConfig {
  std::string tokenizer = "standard";  // "standard" | "alnum"
  bool possessive = true;              // strip English possessive 's
  bool lowercase = true;
  std::string stopwords = "lucene";  // "lucene" (33 English stop words) | "none"
  std::string stemmer = "porter";    // a libstemmer algorithm name | "none"

  // One line for logs and GetIndexInfo: "standard+possessive+lowercase+stop(lucene)+porter".
  std::string Describe() const;
  friend bool operator==(const AnalyzerConfig&, const AnalyzerConfig&) = default;
};

// Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
const std::vector<absl::string_view>& LuceneEnglishStopWords();

class Analyzer {
 public:
  // INVALID_ARGUMENT for an unknown tokenizer, stop list or stemmer.
  static absl::StatusOr<std::unique_ptr<Analyzer>> Create(const AnalyzerConfig& config);
  ~Analyzer();

  const AnalyzerConfig& config() const { return config_; }

  // Appends the terms of `text` (UTF-8; invalid bytes are treated as separators) to *terms.
  void Analyze(absl::string_view text, std::vector<std::string>* terms) const;

  // The same terms, each with the bytes of `text` its token spans ([begin, end)); a token longer
  // than 255 characters gives several terms, each spanning its piece. For highlighting.
  struct TermSpan {
    std::string term;
    size_t begin = 0;
    size_t end = 0;
    friend bool operator==(const TermSpan&, const TermSpan&) = default;
  };
  void AnalyzeWithOffsets(absl::string_view text, std::vector<TermSpan>* spans) const;

  // Analyzes one raw token the way the chain after the tokenizer does (possessive, lower-case,
  // stop words, stemmer). Returns false when the token is dropped (a stop word).
  bool Normalize(absl::string_view token, std::string* term) const;

 private:
  struct State;
  explicit Analyzer(const AnalyzerConfig& config);
  std::unique_ptr<State> Borrow() const;
  void Return(std::unique_ptr<State> state) const;
  bool NormalizeWith(State& state, absl::string_view token, std::string* term) const;
  // Calls visit(term, begin, end) for each term of `text` (defined and used in analyzer.cc only).
  template <typename Visit>
  void ForEachTerm(absl::string_view text, Visit&& visit) const;

  AnalyzerConfig config_;
  bool drop_stopwords_ = false;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<State>> pool_;
};

}  // namespace tandem::index
