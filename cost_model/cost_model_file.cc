#include "cost_model/cost_model_file.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cost_model/m5_text.h"

namespace tandem::cost_model {
namespace {

// "-" for "not evaluated": negative or NaN (no sample with a measurable time).
std::string FormatError(double mre) {
  return mre >= 0 && std::isfinite(mre) ? FormatDouble(mre) : "-";
}

bool ParseError(absl::string_view text, double* mre) {
  if (text == "-") {
    *mre = -1;
    return true;
  }
  return ParseFinite(text, mre) && *mre >= 0;
}

// `features`: how many features a sample has, kNumCostFeatures or (a version 1 file, from before
// filters) kNumCostFeaturesWithoutFilter.
absl::Status ReadEngine(TextLines& lines, size_t features, EngineCostRecord* e) {
  std::vector<absl::string_view> f;
  if (!lines.Next(&f) || f.size() != 2 || f[0] != "trained" ||
      !ParseCount(f[1], &e->trained_samples)) {
    return lines.Error("expected 'trained <samples>'");
  }
  if (!lines.Next(&f) || f.size() != 4 || f[0] != "evaluated" ||
      !ParseCount(f[1], &e->evaluated_samples) || !ParseError(f[2], &e->mean_relative_error) ||
      !ParseError(f[3], &e->heuristic_relative_error)) {
    return lines.Error("expected 'evaluated <samples> <model error|-> <heuristic error|->'");
  }
  if (!lines.Next(&f) || f.size() != 2 || f[0] != "model" ||
      (f[1] != "none" && f[1] != "m5rules")) {
    return lines.Error("expected 'model m5rules' or 'model none'");
  }
  if (f[1] == "m5rules") {
    absl::StatusOr<M5Rules> rules = M5Rules::Read(lines);
    if (!rules.ok()) return rules.status();
    // A version 2 file may keep rules trained before filters (7 attributes) beside samples of 8.
    if (rules->attributes().size() > features || !CostFeaturesPrefixOk(rules->attributes())) {
      return lines.Error("the model's attributes are not the cost features of this file's version");
    }
    e->rules = std::make_shared<const M5Rules>(*std::move(rules));
  }
  size_t count = 0;
  if (!lines.Next(&f) || f.size() != 2 || f[0] != "samples" || !ParseCount(f[1], &count)) {
    return lines.Error("expected 'samples <count>'");
  }
  if (count > kMaxFileSamples) {
    return lines.Error(count, " samples; a model file holds at most ", kMaxFileSamples);
  }
  e->samples.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!lines.Next(&f)) return lines.Error("expected sample ", i + 1, " of ", count);
    if (f.size() != features + 1) {
      return lines.Error("a sample is ", features, " features and a time, got ", f.size(),
                         " fields");
    }
    double v[kNumCostFeatures + 1];
    for (size_t j = 0; j < f.size(); ++j) {
      if (!ParseFinite(f[j], &v[j])) return lines.Error("not a finite number: '", f[j], "'");
    }
    if (v[features] < 0) return lines.Error("negative time");
    CostSample s;
    s.features = FeaturesFromValues(std::span<const double>(v, features));
    if (!(s.features.filter_selectivity >= 0 && s.features.filter_selectivity <= 1)) {
      return lines.Error("filter selectivity ", s.features.filter_selectivity,
                         " is not a fraction");
    }
    s.ms = v[features];
    e->samples.push_back(s);
  }
  return absl::OkStatus();
}

void AppendEngine(absl::string_view name, const EngineCostRecord& e, std::string* out) {
  absl::StrAppend(out, "engine ", name, "\n", "trained ", e.trained_samples, "\n", "evaluated ",
                  e.evaluated_samples, " ", FormatError(e.mean_relative_error), " ",
                  FormatError(e.heuristic_relative_error), "\n");
  if (e.rules) {
    absl::StrAppend(out, "model m5rules\n", e.rules->Save());
  } else {
    absl::StrAppend(out, "model none\n");
  }
  absl::StrAppend(out, "samples ", e.samples.size(), "\n");
  for (const CostSample& s : e.samples) {
    const QueryFeatures& f = s.features;
    for (double v : FeatureValues(f)) absl::StrAppend(out, FormatDouble(v), " ");
    absl::StrAppend(out, FormatDouble(s.ms), "\n");
  }
}

}  // namespace

std::string CostModelFile::meta(absl::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return "";
}

absl::StatusOr<std::string> CostModelFile::Save() const {
  std::string out = absl::StrCat("tandem-cost-model ", kCostModelFileVersion, "\n", "space ",
                                 FeatureSpaceName(space), "\n");
  for (const auto& [key, value] : metadata) {
    if (key.empty() || key.find_first_of(" \t\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("metadata key '", key, "' is not one word"));
    }
    if (value.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' has a line break"));
    }
    absl::StrAppend(&out, "meta ", key, " ", value, "\n");
  }
  for (Processor p : {Processor::kCpu, Processor::kGpu}) {
    if (engine(p).samples.size() > kMaxFileSamples) {
      return absl::InvalidArgumentError(absl::StrCat(
          ProcessorName(p), ": ", engine(p).samples.size(), " samples, at most ", kMaxFileSamples));
    }
    AppendEngine(ProcessorName(p), engine(p), &out);
  }
  return out;
}

absl::StatusOr<CostModelFile> CostModelFile::Parse(absl::string_view text,
                                                   absl::string_view source) {
  TextLines lines(text, source);
  std::vector<absl::string_view> f;
  if (!lines.Next(&f) || f[0] != "tandem-cost-model") {
    return lines.Error("expected 'tandem-cost-model ", kCostModelFileVersion, "'");
  }
  int version = 0;
  if (f.size() != 2 || !absl::SimpleAtoi(f[1], &version) || version < 1 ||
      version > kCostModelFileVersion) {
    return lines.Error("unsupported tandem-cost-model version '", lines.raw(),
                       "' (this build reads 1 to ", kCostModelFileVersion, ")");
  }
  const size_t features = version == 1 ? kNumCostFeaturesWithoutFilter : kNumCostFeatures;
  CostModelFile file;
  if (!lines.Next(&f) || f.size() != 2 || f[0] != "space")
    return lines.Error("expected 'space log|linear'");
  absl::StatusOr<FeatureSpace> space = ParseFeatureSpace(f[1]);
  if (!space.ok()) return lines.Error(space.status().message());
  file.space = *space;
  bool seen[2] = {false, false};
  while (lines.Next(&f)) {
    if (f[0] == "meta" && f.size() >= 2) {
      absl::string_view value = absl::StripAsciiWhitespace(lines.raw());
      value.remove_prefix(4);  // "meta"
      value = absl::StripLeadingAsciiWhitespace(value);
      value.remove_prefix(f[1].size());
      file.metadata.emplace_back(std::string(f[1]), std::string(absl::StripAsciiWhitespace(value)));
    } else if (f[0] == "engine" && f.size() == 2 && (f[1] == "cpu" || f[1] == "gpu")) {
      const Processor p = f[1] == "cpu" ? Processor::kCpu : Processor::kGpu;
      if (seen[static_cast<int>(p)]) return lines.Error("engine ", f[1], " appears twice");
      seen[static_cast<int>(p)] = true;
      if (absl::Status s = ReadEngine(lines, features, &file.engine(p)); !s.ok()) return s;
    } else {
      return lines.Error("expected 'meta <key> <value>' or 'engine cpu|gpu', got '", lines.raw(),
                         "'");
    }
  }
  return file;
}

absl::StatusOr<CostModelFile> ReadCostModelFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open cost model file ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read cost model file ", path));
  return CostModelFile::Parse(text.str(), path);
}

absl::Status WriteCostModelFile(const CostModelFile& file, const std::string& path) {
  absl::StatusOr<std::string> text = file.Save();
  if (!text.ok()) return text.status();
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << *text;
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace tandem::cost_model
