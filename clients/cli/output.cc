#include "clients/cli/output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/enum_names.h"
#include "google/protobuf/util/json_util.h"

namespace tandem::cli {
namespace {

constexpr base::EnumName<tandem::v1::QueryMode> kModeNames[] = {
    {tandem::v1::QUERY_MODE_AND, "and"},
    {tandem::v1::QUERY_MODE_OR, "or"},
    {tandem::v1::QUERY_MODE_AND_OR, "and_or"}};

std::string ModeName(tandem::v1::QueryMode mode) {
  return base::NameOf(kModeNames, mode, "unspecified");
}

// The snippet with its highlights in [brackets] and "..." where it cuts the document's text.
std::string MarkedSnippet(const tandem::v1::Snippet& snippet) {
  const std::string& text = snippet.text();
  std::string out = snippet.starts_inside() ? "..." : "";
  size_t at = 0;
  for (const tandem::v1::Highlight& h : snippet.highlights()) {
    if (h.begin() < at || h.end() < h.begin() || h.end() > text.size()) break;  // malformed
    absl::StrAppend(&out, text.substr(at, h.begin() - at), "[",
                    text.substr(h.begin(), h.end() - h.begin()), "]");
    at = h.end();
  }
  absl::StrAppend(&out, text.substr(at), snippet.ends_inside() ? "..." : "");
  return out;
}

// The longest stored-field value a table line shows, in bytes (cut on a character boundary).
constexpr size_t kFieldValueWidth = 96;

}  // namespace

std::string FormatSearchResponse(const tandem::v1::SearchResponse& response) {
  size_t id_width = 11;  // "external_id"
  for (const tandem::v1::Hit& hit : response.hits()) {
    id_width = std::max(id_width, hit.external_id().size());
  }
  std::string out = absl::StrFormat("%5s  %10s  %-*s  %10s\n", "rank", "score",
                                    static_cast<int>(id_width), "external_id", "docid");
  for (int i = 0; i < response.hits_size(); ++i) {
    const tandem::v1::Hit& hit = response.hits(i);
    absl::StrAppendFormat(&out, "%5d  %10.6f  %-*s  %10d\n", i + 1, hit.score(),
                          static_cast<int>(id_width), hit.external_id(), hit.docid());
    // Stored fields under their hit, one line each, cut to a line's width (--json has them whole).
    for (const tandem::v1::StoredField& field : hit.fields()) {
      std::string value = field.value();
      for (char& c : value) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      }
      if (value.size() > kFieldValueWidth) {
        size_t cut = kFieldValueWidth;
        while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
        value = absl::StrCat(value.substr(0, cut), "...");
      }
      absl::StrAppendFormat(&out, "%19s%s: %s\n", "", field.name(), value);
    }
    if (hit.has_snippet() && !hit.snippet().text().empty()) {
      absl::StrAppendFormat(&out, "%19s%s\n", "", MarkedSnippet(hit.snippet()));
    }
  }
  const tandem::v1::QueryStats& s = response.stats();
  absl::StrAppendFormat(
      &out,
      "%d hits; engine %s, executed %s; %d postings decoded; queued %d us, executed %d us, "
      "total %d us; terms: %s\n",
      response.hits_size(), s.engine(), ModeName(s.executed_mode()), s.postings_decoded(),
      s.queued_micros(), s.execution_micros(), s.total_micros(),
      s.terms().empty() ? "(none)" : absl::StrJoin(s.terms(), " "));
  if (response.degraded()) {
    absl::StrAppendFormat(&out,
                          "degraded: no answer from shard(s) %s; these are the others' hits\n",
                          absl::StrJoin(response.missing_shards(), ", "));
  }
  return out;
}

std::string FormatIndexInfo(const tandem::v1::GetIndexInfoResponse& info) {
  std::string out;
  auto line = [&out](absl::string_view key, const auto& value) {
    absl::StrAppend(&out, absl::StrFormat("%-24s", key), value, "\n");
  };
  line("index id", info.index_id());
  line("documents", info.documents());
  line("terms", info.terms());
  line("postings", info.postings());
  line("index bytes", info.index_bytes());
  line("average document length", absl::StrFormat("%.2f", info.average_document_length()));
  line("codec", info.codec());
  line("analyzer", info.analyzer());
  line("build time", info.build_time());
  line("format version", info.format_version());
  line("source", absl::StrCat(info.source_format(), " ", info.source_input()));
  line("engines", absl::StrJoin(info.engines(), ", "));
  return out;
}

nlohmann::json ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok()) {
    return nlohmann::json{{"error", "message could not be converted to JSON"}};
  }
  return nlohmann::json::parse(text);
}

std::string StatusLine(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

nlohmann::json StatusJson(const absl::Status& status) {
  return nlohmann::json{{"code", absl::StatusCodeToString(status.code())},
                        {"message", std::string(status.message())}};
}

}  // namespace tandem::cli
