// Standing queries' untrusted inputs: the first byte picks the target.
//   - even: the bytes as a predicate's text form (clients send it). ParsePredicate, then
//     NormalizePredicate with the English analyzer; a predicate that passes formats back to text
//     that parses to itself, survives the subscriptions file's encoding, and gives the same answer
//     on the CPU matcher as the brute-force evaluation on a few fixed documents; every string the
//     node would answer with (names, string values and terms, the text form) is UTF-8, since a
//     client refuses a proto3 string that is not;
//   - 1 modulo 4: the bytes as a subscriptions file's payload (the node reads it at start).
//     DecodeSubscriptions never crashes and refuses only with DATA_LOSS; what it accepts re-encodes
//     to bytes that decode to the same subscriptions, each of which NormalizePredicate accepts;
//   - 3 modulo 4: the bytes after a log header as the subscriptions' change log. It never crashes
//     and refuses only with DATA_LOSS; what it accepts (less a torn tail) re-frames, change by
//     change, to a log that decodes to the same changes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "index/analyzer.h"
#include "match/cpu_matcher.h"
#include "match/model.h"
#include "match/predicate_parser.h"
#include "match/subscription_file.h"

namespace {

using namespace tandem::match;  // NOLINT: a fuzzer's one file

const tandem::index::Analyzer& English() {
  static const auto* analyzer =
      tandem::index::Analyzer::Create(tandem::index::AnalyzerConfig{})->release();
  return *analyzer;
}

const std::vector<Event>& Documents() {
  static const auto* events = [] {
    auto* out = new std::vector<Event>;
    const Limits limits;
    out->push_back(*MakeEvent(
        {Attribute{"year", Value::Int(2002)}, Attribute{"domain", Value::String("enron.com")},
         Attribute{"score", Value::Double(0.5)}},
        "gas prices rose in California", &English(), limits));
    out->push_back(*MakeEvent({Attribute{"a", Value::Int(-1)}, Attribute{"b", Value::String("")}},
                              "", &English(), limits));
    out->push_back(*MakeEvent(
        {Attribute{"year", Value::Double(2002.0)}, Attribute{"x", Value::String("a\"b")}},
        "the year of the gas", &English(), limits));
    return out;
  }();
  return *events;
}

void CheckMatchers(const Predicate& p) {
  auto cpu = CpuMatcher::Create();
  TANDEM_FUZZ_CHECK(cpu.ok());
  TANDEM_FUZZ_CHECK((*cpu)->Add(1, 7, p).ok());
  std::vector<std::vector<InterfaceId>> matched;
  TANDEM_FUZZ_CHECK((*cpu)->Match(Documents(), &matched).ok());
  for (size_t e = 0; e < Documents().size(); ++e) {
    TANDEM_FUZZ_CHECK(matched[e].empty() != PredicateMatches(p, Documents()[e]));
  }
}

// Whether every name and string value of `p` is UTF-8 (terms included).
bool StringsAreUtf8(const Predicate& p) {
  for (const Filter& f : p.filters) {
    for (const Constraint& c : f.constraints) {
      if (!tandem::fuzz::IsValidUtf8(c.name)) return false;
      if (c.value.type == ValueType::kString && !tandem::fuzz::IsValidUtf8(c.value.s)) return false;
    }
  }
  return true;
}

void FuzzText(absl::string_view text) {
  absl::StatusOr<Predicate> parsed = ParsePredicate(text);
  if (!parsed.ok()) {
    TANDEM_FUZZ_CHECK(absl::IsInvalidArgument(parsed.status()));
    return;
  }
  absl::StatusOr<Predicate> p = NormalizePredicate(*parsed, &English(), Limits{});
  if (!p.ok()) {
    TANDEM_FUZZ_CHECK(absl::IsInvalidArgument(p.status()));
    return;
  }
  // What SubscriptionService answers: the predicate as messages and in text form.
  TANDEM_FUZZ_CHECK(StringsAreUtf8(*p));
  const std::string formatted = FormatPredicate(*p);
  TANDEM_FUZZ_CHECK(tandem::fuzz::IsValidUtf8(formatted));
  absl::StatusOr<Predicate> again = ParsePredicate(formatted);
  TANDEM_FUZZ_CHECK(again.ok() && *again == *p);
  SubscriptionSnapshot snapshot;
  snapshot.records.push_back(SubscriptionRecord{1, "i", *p});
  snapshot.next_id = 2;
  absl::StatusOr<SubscriptionSnapshot> back = DecodeSubscriptions(EncodeSubscriptions(snapshot));
  TANDEM_FUZZ_CHECK(back.ok() && back->records.size() == 1 && back->records[0].predicate == *p);
  CheckMatchers(*p);
}

void FuzzFile(absl::string_view payload) {
  const tandem::fuzz::Bytes bytes(payload);
  absl::StatusOr<SubscriptionSnapshot> s = DecodeSubscriptions(bytes.view());
  if (!s.ok()) {
    TANDEM_FUZZ_CHECK(absl::IsDataLoss(s.status()));
    return;
  }
  absl::StatusOr<SubscriptionSnapshot> again = DecodeSubscriptions(EncodeSubscriptions(*s));
  TANDEM_FUZZ_CHECK(again.ok() && again->next_id == s->next_id &&
                    again->records.size() == s->records.size());
  for (size_t i = 0; i < s->records.size(); ++i) {
    TANDEM_FUZZ_CHECK(again->records[i].id == s->records[i].id &&
                      again->records[i].interface == s->records[i].interface &&
                      again->records[i].predicate == s->records[i].predicate);
    // What a file may hold is what NormalizePredicate lets through (terms are already analyzed,
    // so their check is skipped: a stored term need not survive analysis again), save strings
    // that are not UTF-8: older builds stored them, and the registry drops them at Open.
    Predicate p = s->records[i].predicate;
    if (!StringsAreUtf8(p)) continue;
    bool has_terms = false;
    for (const Filter& f : p.filters) {
      for (const Constraint& c : f.constraints) has_terms |= c.op == Op::kContains;
    }
    Limits limits;
    limits.max_filters_per_predicate = 1 << 30;
    limits.max_constraints_per_filter = kMaxConstraintsPerFilter;
    limits.max_value_bytes = 1 << 30;
    if (!has_terms) TANDEM_FUZZ_CHECK(NormalizePredicate(p, nullptr, limits).ok());
  }
}

void FuzzLog(absl::string_view frames) {
  const tandem::fuzz::Bytes bytes(LogHeader() + std::string(frames));
  absl::StatusOr<SubscriptionLogContents> log = DecodeSubscriptionLog(bytes.view());
  if (!log.ok()) {
    TANDEM_FUZZ_CHECK(absl::IsDataLoss(log.status()));
    return;
  }
  TANDEM_FUZZ_CHECK(log->valid_bytes <= bytes.size());
  TANDEM_FUZZ_CHECK(log->torn.empty() == (log->valid_bytes == bytes.size()));
  std::string again = LogHeader();
  for (const SubscriptionChange& change : log->changes) {
    std::string one;
    EncodeChange(change, &one);
    again += FrameLogBatch(one);
  }
  absl::StatusOr<SubscriptionLogContents> back = DecodeSubscriptionLog(again);
  TANDEM_FUZZ_CHECK(back.ok() && back->torn.empty() && back->changes.size() == log->changes.size());
  for (size_t i = 0; i < log->changes.size(); ++i) {
    TANDEM_FUZZ_CHECK(back->changes[i].remove == log->changes[i].remove &&
                      back->changes[i].record.id == log->changes[i].record.id &&
                      back->changes[i].record.interface == log->changes[i].record.interface &&
                      back->changes[i].record.predicate == log->changes[i].record.predicate);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::Input input(data, size);
  const uint8_t target = input.Byte();
  const tandem::fuzz::Bytes rest(input.rest());
  if (target % 2 == 0) {
    FuzzText(rest.view());
  } else if (target % 4 == 1) {
    FuzzFile(rest.view());
  } else {
    FuzzLog(rest.view());
  }
  return 0;
}
