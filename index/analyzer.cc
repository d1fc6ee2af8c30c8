#include "index/analyzer.h"

#include <libstemmer.h>
#include <unicode/brkiter.h>
#include <unicode/ubrk.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>
#include <unicode/utf8.h>

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem::index {
namespace {

// Lucene's StandardTokenizer splits tokens longer than this many characters.
constexpr size_t kMaxTokenBytes = 255;

const absl::flat_hash_set<absl::string_view>& StopSet() {
  static const auto* set = new absl::flat_hash_set<absl::string_view>(
      LuceneEnglishStopWords().begin(), LuceneEnglishStopWords().end());
  return *set;
}

bool IsAsciiAlnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// EnglishPossessiveFilter: strips a trailing 's / ’s / ＇s (either case of s).
absl::string_view StripPossessive(absl::string_view t) {
  if (t.size() < 2 || (t.back() != 's' && t.back() != 'S')) return t;
  absl::string_view head = t.substr(0, t.size() - 1);
  if (absl::EndsWith(head, "'")) return t.substr(0, t.size() - 2);
  if (absl::EndsWith(head, "\xE2\x80\x99") || absl::EndsWith(head, "\xEF\xBC\x87")) {
    return t.substr(0, t.size() - 4);
  }
  return t;
}

// LowerCaseFilter: Character.toLowerCase per code point, no locale rules.
void LowerCase(absl::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  const auto* s = reinterpret_cast<const uint8_t*>(in.data());
  const int32_t n = static_cast<int32_t>(in.size());
  int32_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      char c = static_cast<char>(s[i++]);
      out->push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
      continue;
    }
    UChar32 cp;
    const int32_t start = i;
    U8_NEXT(s, i, n, cp);
    if (cp < 0) {  // invalid sequence: keep the bytes as they are
      out->append(in.data() + start, static_cast<size_t>(i - start));
      continue;
    }
    cp = u_tolower(cp);
    uint8_t buf[4];
    int32_t len = 0;
    U8_APPEND_UNSAFE(buf, len, cp);
    out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(len));
  }
}

}  // namespace

const std::vector<absl::string_view>& LuceneEnglishStopWords() {
  static const auto* words = new std::vector<absl::string_view>{
      "a",   "an",    "and",  "are",   "as",    "at",   "be",   "but", "by",  "for",  "if",
      "in",  "into",  "is",   "it",    "no",    "not",  "of",   "on",  "or",  "such", "that",
      "the", "their", "then", "there", "these", "they", "this", "to",  "was", "will", "with"};
  return *words;
}

std::string AnalyzerConfig::Describe() const {
  std::vector<std::string> parts = {tokenizer};
  if (possessive) parts.push_back("possessive");
  if (lowercase) parts.push_back("lowercase");
  if (stopwords != "none") parts.push_back(absl::StrCat("stop(", stopwords, ")"));
  if (stemmer != "none") parts.push_back(stemmer);
  return absl::StrJoin(parts, "+");
}

struct Analyzer::State {
  std::unique_ptr<icu::BreakIterator> words;
  sb_stemmer* stemmer = nullptr;
  std::string lower;
  ~State() {
    if (stemmer != nullptr) sb_stemmer_delete(stemmer);
  }
};

Analyzer::Analyzer(const AnalyzerConfig& config) : config_(config) {}
Analyzer::~Analyzer() = default;

absl::StatusOr<std::unique_ptr<Analyzer>> Analyzer::Create(const AnalyzerConfig& config) {
  if (config.tokenizer != "standard" && config.tokenizer != "alnum") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown tokenizer '", config.tokenizer, "' (known: standard, alnum)"));
  }
  if (config.stopwords != "lucene" && config.stopwords != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown stop word list '", config.stopwords, "' (known: lucene, none)"));
  }
  std::unique_ptr<Analyzer> analyzer(new Analyzer(config));
  analyzer->drop_stopwords_ = config.stopwords == "lucene";
  // Build one state now so configuration errors (unknown stemmer) surface at Create.
  if (config.stemmer != "none") {
    sb_stemmer* s = sb_stemmer_new(config.stemmer.c_str(), "UTF_8");
    if (s == nullptr) {
      std::vector<std::string> known;
      for (const char** p = sb_stemmer_list(); *p != nullptr; ++p) known.emplace_back(*p);
      return absl::InvalidArgumentError(absl::StrCat("unknown stemmer '", config.stemmer,
                                                     "' (known: none, ", absl::StrJoin(known, ", "),
                                                     ")"));
    }
    sb_stemmer_delete(s);
  }
  std::unique_ptr<State> state = analyzer->Borrow();
  if (config.tokenizer == "standard" && state->words == nullptr) {
    return absl::InternalError("ICU word break iterator unavailable");
  }
  analyzer->Return(std::move(state));
  return analyzer;
}

std::unique_ptr<Analyzer::State> Analyzer::Borrow() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pool_.empty()) {
      std::unique_ptr<State> s = std::move(pool_.back());
      pool_.pop_back();
      return s;
    }
  }
  auto state = std::make_unique<State>();
  if (config_.tokenizer == "standard") {
    UErrorCode status = U_ZERO_ERROR;
    state->words.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status)) state->words.reset();
  }
  if (config_.stemmer != "none") {
    state->stemmer = sb_stemmer_new(config_.stemmer.c_str(), "UTF_8");
  }
  return state;
}

void Analyzer::Return(std::unique_ptr<State> state) const {
  std::lock_guard<std::mutex> lock(mu_);
  pool_.push_back(std::move(state));
}

bool Analyzer::NormalizeWith(State& state, absl::string_view token, std::string* term) const {
  if (config_.possessive) token = StripPossessive(token);
  if (token.empty()) return false;
  if (config_.lowercase) {
    LowerCase(token, &state.lower);
  } else {
    state.lower.assign(token.data(), token.size());
  }
  if (drop_stopwords_ && StopSet().count(state.lower) > 0) return false;
  if (state.stemmer != nullptr) {
    const sb_symbol* stemmed =
        sb_stemmer_stem(state.stemmer, reinterpret_cast<const sb_symbol*>(state.lower.data()),
                        static_cast<int>(state.lower.size()));
    if (stemmed == nullptr) {  // out of memory inside libstemmer: keep the unstemmed form
      *term = state.lower;
    } else {
      term->assign(reinterpret_cast<const char*>(stemmed),
                   static_cast<size_t>(sb_stemmer_length(state.stemmer)));
    }
  } else {
    *term = state.lower;
  }
  return !term->empty();
}

bool Analyzer::Normalize(absl::string_view token, std::string* term) const {
  std::unique_ptr<State> state = Borrow();
  bool kept = NormalizeWith(*state, token, term);
  Return(std::move(state));
  return kept;
}

template <typename Visit>
void Analyzer::ForEachTerm(absl::string_view text, Visit&& visit) const {
  std::unique_ptr<State> state = Borrow();
  std::string term;
  auto emit = [&](absl::string_view token) {
    // Lucene splits over-long tokens into pieces of at most 255 characters.
    while (!token.empty()) {
      size_t cut = std::min(token.size(), kMaxTokenBytes);
      while (cut < token.size() && cut > 0 && (static_cast<uint8_t>(token[cut]) & 0xC0) == 0x80) {
        --cut;  // keep UTF-8 sequences whole
      }
      if (NormalizeWith(*state, token.substr(0, cut), &term)) {
        const size_t begin = static_cast<size_t>(token.data() - text.data());
        visit(term, begin, begin + cut);
      }
      token.remove_prefix(cut);
    }
  };

  if (config_.tokenizer == "alnum") {
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && !IsAsciiAlnum(static_cast<unsigned char>(text[i]))) ++i;
      size_t start = i;
      while (i < text.size() && IsAsciiAlnum(static_cast<unsigned char>(text[i]))) ++i;
      if (i > start) emit(text.substr(start, i - start));
    }
  } else {
    UErrorCode status = U_ZERO_ERROR;
    UText* ut = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
    if (U_SUCCESS(status)) {
      icu::BreakIterator& words = *state->words;
      words.setText(ut, status);
      if (U_SUCCESS(status)) {
        int32_t start = words.first();
        for (int32_t end = words.next(); end != icu::BreakIterator::DONE;
             start = end, end = words.next()) {
          // Rule status >= UBRK_WORD_NONE_LIMIT marks numbers, letters, kana and ideographs;
          // spaces and punctuation are UBRK_WORD_NONE.
          if (words.getRuleStatus() < UBRK_WORD_NONE_LIMIT) continue;
          emit(text.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)));
        }
      }
      // Detach the iterator from the UText before closing it.
      words.setText(icu::UnicodeString());
    }
    utext_close(ut);
  }
  Return(std::move(state));
}

void Analyzer::Analyze(absl::string_view text, std::vector<std::string>* terms) const {
  ForEachTerm(text, [terms](const std::string& term, size_t, size_t) { terms->push_back(term); });
}

void Analyzer::AnalyzeWithOffsets(absl::string_view text, std::vector<TermSpan>* spans) const {
  ForEachTerm(text, [spans](const std::string& term, size_t begin, size_t end) {
    spans->push_back({term, begin, end});
  });
}

}  // namespace tandem::index
