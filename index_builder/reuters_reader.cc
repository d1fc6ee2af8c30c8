// Reuters-21578 reader (Lewis, distribution 1.0): 22 files reut2-000.sgm .. reut2-021.sgm holding
// 21,578 <REUTERS ... NEWID="n"> elements. Indexed are <TITLE> and <BODY>; TOPICS, PLACES and DATE
// are stored. Of the three <TEXT> types, a TYPE="BRIEF" story has a title only (its text is "Blah
// blah blah."), and a TYPE="UNPROC" one has neither title nor body, its text being unstructured
// tables: that text is indexed as it stands. The attributes are the TOPICS and PLACES categories
// (each of several <D> elements) and the LEWISSPLIT attribute, the ModLewis split's TRAIN, TEST or
// NOT-USED, in lower case. The files carry control characters as references (&#2;
// starts and &#3; ends each text) and one stray Latin-1 byte (0xFC in reut2-017.sgm); HtmlToText
// turns the former into spaces (DecodeEntities) and the latter into "ü" (SanitizeUtf8).
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index_builder/markup.h"
#include "index_builder/reader_attributes.h"
#include "index_builder/readers_internal.h"
#include "index_builder/sgml.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"

namespace tandem::index_builder::internal {
namespace {

// The element that holds one document.
constexpr char kReutersTag[] = "REUTERS";

bool SelectsSgmFile(const std::filesystem::path& file) { return file.extension() == ".sgm"; }

class ReutersReader : public ElementReader {
 public:
  ReutersReader(InputFiles files, ReaderOptions options)
      : ElementReader(std::move(files), std::move(options), kReutersTag) {}

 protected:
  bool ParseElement(const InputFile& file, const Element& element, Document* doc) override {
    const absl::string_view sgml = element.text;
    const absl::string_view open_tag = sgml.substr(0, sgml.find('>'));
    const std::string id(absl::StripAsciiWhitespace(AttributeValue(open_tag, "NEWID")));
    if (id.empty()) {
      ReportBadDocument(file, element.line, "<REUTERS> without a NEWID attribute");
      return false;
    }
    doc->external_id = SanitizeUtf8(id);
    doc->location = Location(file, element.line);
    AddAttribute("lewissplit", absl::AsciiStrToLower(AttributeValue(open_tag, "LEWISSPLIT")), doc);
    Fill(sgml, doc);
    return true;
  }

 private:
  static void Fill(absl::string_view sgml, Document* doc) {
    const absl::string_view text = FirstElementContent(sgml, "TEXT");
    const std::string title = HtmlToText(FirstElementContent(text, "TITLE"));
    const absl::string_view body = FirstElementContent(text, "BODY");
    if (title.empty() && body.empty()) {
      doc->text = HtmlToText(text);
    } else {
      AppendParagraph(title, &doc->text);
      AppendParagraph(HtmlToText(body), &doc->text);
    }
    if (!title.empty()) doc->fields.emplace_back("title", CollapseWhitespace(title));
    for (const absl::string_view topic :
         ElementContents(FirstElementContent(sgml, "TOPICS"), "D")) {
      doc->fields.emplace_back("topic", HtmlToText(topic));
      AddAttribute("topics", doc->fields.back().second, doc);
    }
    for (const absl::string_view place :
         ElementContents(FirstElementContent(sgml, "PLACES"), "D")) {
      doc->fields.emplace_back("place", HtmlToText(place));
      AddAttribute("places", doc->fields.back().second, doc);
    }
    const std::string date = HtmlToText(FirstElementContent(sgml, "DATE"));
    if (!date.empty()) doc->fields.emplace_back("date", date);
  }
};

std::vector<AttributeField> ReutersAttributeFields() {
  return {{"topics", AttributeType::kKeyword, "the story's TOPICS categories (several or none)"},
          {"places", AttributeType::kKeyword, "the story's PLACES categories (several or none)"},
          {"lewissplit", AttributeType::kKeyword,
           "LEWISSPLIT of the ModLewis split: train, test or not-used"}};
}

}  // namespace

bool RecognizesReuters(absl::string_view head) { return absl::StrContains(head, "<REUTERS"); }

const FormatSpec kReutersFormat = {.name = "reuters",
                                   .files_wanted = "*.sgm",
                                   .selects = &SelectsSgmFile,
                                   .make = &MakeReader<ReutersReader>,
                                   .recognizes = &RecognizesReuters,
                                   .starts_record = &StartsElementOf<kReutersTag>,
                                   .attribute_fields = &ReutersAttributeFields};

}  // namespace tandem::index_builder::internal
