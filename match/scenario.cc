#include "match/scenario.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace tandem::match {
namespace {

// Draws 0..n-1 uniformly (s = 0) or by Zipf with exponent s, by inverting the cumulative weights.
class RankSampler {
 public:
  RankSampler(int n, double s) : cumulative_(n) {
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      sum += s == 0 ? 1.0 : 1.0 / std::pow(i + 1, s);
      cumulative_[i] = sum;
    }
  }
  int operator()(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> u(0, cumulative_.back());
    const double x = u(rng);
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), x);
    return static_cast<int>(std::min<ptrdiff_t>(it - cumulative_.begin(), cumulative_.size() - 1));
  }

 private:
  std::vector<double> cumulative_;
};

std::string Word(int i) {
  // A deterministic 3-8 letter word per value index; distinct words share prefixes and pieces.
  uint64_t h = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  const int len = 3 + static_cast<int>(h % 6);
  std::string w;
  for (int k = 0; k < len; ++k) {
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    w.push_back(static_cast<char>('a' + (h >> 33) % 8));  // 8 letters: pieces recur
  }
  return w;
}

Value RandomValue(const Scenario& sc, bool numeric, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> v(0, std::max(0, sc.values - 1));
  if (numeric) return Value::Int(v(rng));
  return Value::String(Word(v(rng)));
}

}  // namespace

Scenario SizedScenario(int interfaces, int filters_min, int filters_max, int names, int values) {
  Scenario scenario;
  scenario.interfaces = interfaces;
  scenario.filters_min = filters_min;
  scenario.filters_max = filters_max;
  scenario.names = names;
  scenario.values = values;
  return scenario;
}

Scenario WithTerms(Scenario scenario, int vocabulary, double term_share, int event_terms) {
  scenario.vocabulary = vocabulary;
  scenario.term_share = term_share;
  scenario.event_terms = event_terms;
  return scenario;
}

std::string ScenarioName(int i) { return absl::StrCat("a", i); }

bool ScenarioNameIsNumeric(const Scenario& scenario, int i) {
  // Interleaved so both types appear among popular names under Zipf.
  const double x = (static_cast<double>((i * 7919) % 1000) + 0.5) / 1000.0;
  return x < scenario.numeric_share;
}

std::vector<GeneratedSubscription> GenerateSubscriptions(const Scenario& sc, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const RankSampler names(sc.names, sc.zipf);
  const RankSampler words(std::max(1, sc.vocabulary), 1.0);
  std::uniform_int_distribution<int> filters(sc.filters_min, sc.filters_max);
  std::uniform_int_distribution<int> constraints(sc.constraints_min, sc.constraints_max);
  std::uniform_int_distribution<int> quarter(0, 3);
  std::bernoulli_distribution is_term(sc.vocabulary > 0 ? sc.term_share : 0);
  static constexpr Op kNumericOps[] = {Op::kEq, Op::kNe, Op::kGt, Op::kLt};
  static constexpr Op kStringOps[] = {Op::kEq, Op::kNe, Op::kSubstring, Op::kPrefix};
  std::vector<GeneratedSubscription> out;
  for (int i = 0; i < sc.interfaces; ++i) {
    const int n = filters(rng);
    GeneratedSubscription current{static_cast<InterfaceId>(i), {}};
    for (int f = 0; f < n; ++f) {
      Filter filter;
      const int c = std::min(constraints(rng), std::max(1, sc.names));
      std::vector<int> used;
      for (int k = 0; k < c; ++k) {
        if (is_term(rng)) {
          filter.constraints.push_back(Constraint{std::string(kTermsName), Op::kContains,
                                                  Value::String(absl::StrCat("w", words(rng)))});
          continue;
        }
        int name = names(rng);
        for (int tries = 0; tries < 8 && std::count(used.begin(), used.end(), name); ++tries) {
          name = names(rng);
        }
        used.push_back(name);
        const bool numeric = ScenarioNameIsNumeric(sc, name);
        Value value = RandomValue(sc, numeric, rng);
        Op op = numeric ? kNumericOps[quarter(rng)] : kStringOps[quarter(rng)];
        if (op == Op::kPrefix || op == Op::kSubstring) {
          // A piece of a word, 1-3 letters, so these hold about as often as in a real schema.
          std::uniform_int_distribution<size_t> len(1, std::min<size_t>(3, value.s.size()));
          const size_t l = len(rng);
          const size_t start = op == Op::kPrefix ? 0 : value.s.size() - l;
          value.s = value.s.substr(start, l);
        }
        filter.constraints.push_back(Constraint{ScenarioName(name), op, std::move(value)});
      }
      current.predicate.filters.push_back(std::move(filter));
      if (static_cast<int>(current.predicate.filters.size()) >= sc.filters_per_subscription) {
        out.push_back(std::move(current));
        current = GeneratedSubscription{static_cast<InterfaceId>(i), {}};
      }
    }
    if (!current.predicate.filters.empty()) out.push_back(std::move(current));
  }
  return out;
}

std::vector<Event> GenerateEvents(const Scenario& sc, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const RankSampler names(sc.names, sc.zipf);
  const RankSampler words(std::max(1, sc.vocabulary), 1.0);
  std::uniform_int_distribution<int> attributes(sc.attributes_min, sc.attributes_max);
  std::vector<Event> events(count);
  for (Event& event : events) {
    const int a = std::min(attributes(rng), sc.names);
    std::vector<int> chosen;
    while (static_cast<int>(chosen.size()) < a) {
      const int name = names(rng);
      if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
    }
    std::sort(chosen.begin(), chosen.end(),
              [](int x, int y) { return ScenarioName(x) < ScenarioName(y); });
    for (int name : chosen) {
      event.attributes.push_back(
          Attribute{ScenarioName(name), RandomValue(sc, ScenarioNameIsNumeric(sc, name), rng)});
    }
    if (sc.vocabulary > 0) {
      for (int t = 0; t < sc.event_terms; ++t) event.terms.push_back(absl::StrCat("w", words(rng)));
      std::sort(event.terms.begin(), event.terms.end());
      event.terms.erase(std::unique(event.terms.begin(), event.terms.end()), event.terms.end());
    }
  }
  return events;
}

}  // namespace tandem::match
