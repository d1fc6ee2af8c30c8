#include "clients/cli/subscription_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tandem::cli {

std::string FormatSubscription(const tandem::v1::Subscription& subscription) {
  return absl::StrCat(subscription.id(), "  ", subscription.interface(), "  ",
                      subscription.predicate_text(), "\n");
}

std::string FormatDocumentMatch(const tandem::v1::DocumentMatch& match) {
  return absl::StrCat(
      match.document_id(), ": ",
      match.interfaces().empty() ? "(none)" : absl::StrJoin(match.interfaces(), ", "), "\n");
}

std::string FormatValue(const tandem::v1::Value& value) {
  switch (value.kind_case()) {
    case tandem::v1::Value::kIntValue:
      return absl::StrCat(value.int_value());
    case tandem::v1::Value::kDoubleValue: {
      std::string s = absl::StrFormat("%.17g", value.double_value());
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // reads back as a double
      return s;
    }
    case tandem::v1::Value::kStringValue: {
      std::string out = "\"";
      for (char c : value.string_value()) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
          out += "\\n";
        } else {
          out += c;
        }
      }
      return out + "\"";
    }
    case tandem::v1::Value::KIND_NOT_SET:
      break;
  }
  return "(unset)";
}

std::string FormatWatchEvent(const tandem::v1::WatchEvent& event) {
  std::string out;
  if (event.dropped() > 0) {
    absl::StrAppend(&out, "(", event.dropped(),
                    " documents dropped: this client read too slowly)\n");
  }
  absl::StrAppend(&out, event.document_id());
  for (int i = 0; i < event.attributes_size(); ++i) {
    const tandem::v1::Attribute& attribute = event.attributes(i);
    absl::StrAppend(&out, i == 0 ? "  " : " ", attribute.name(), "=",
                    FormatValue(attribute.value()));
  }
  return out + "\n";
}

}  // namespace tandem::cli
