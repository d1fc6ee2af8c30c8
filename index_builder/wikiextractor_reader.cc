// WikiExtractor reader (attardi/wikiextractor's plain-text output of a Wikipedia dump): files
// wiki_00, wiki_01, ... holding <doc id="12" url="..." title="Anarchism"> elements whose body is
// the article as plain text. The body's first line repeats the title; it is kept, so the title is
// indexed as part of the text. The id attribute is the external id; title and url are stored.
//
// WikiExtractor escapes the attributes (title="Batman &amp; Robin") but not the body, which keeps a
// few literal "<" ("a value <1%") next to HTML remnants the extractor let through (<br>, </dl>,
// <ref>, <poem>). So attributes are entity-decoded, and the body loses only tags with an HTML or
// MediaWiki name.
//
// A complete element of the body with any other name (<date>2001</date>) is read as metadata: a
// short one is also an attribute, named by its tag in lower case. Few articles have any: in a
// sample of 6,514, four quote a dump's XML (<timestamp>, <model>).
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index_builder/html_entities.h"
#include "index_builder/markup.h"
#include "index_builder/reader_attributes.h"
#include "index_builder/readers_internal.h"
#include "index_builder/sgml.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"

namespace tandem::index_builder::internal {
namespace {

// The element that holds one document.
constexpr char kWikiExtractorTag[] = "doc";

std::string AttributeText(absl::string_view open_tag, absl::string_view name) {
  return CollapseWhitespace(DecodeEntities(SanitizeUtf8(AttributeValue(open_tag, name))));
}

class WikiExtractorReader : public ElementReader {
 public:
  WikiExtractorReader(InputFiles files, ReaderOptions options)
      : ElementReader(std::move(files), std::move(options), kWikiExtractorTag) {}

 protected:
  bool ParseElement(const InputFile& file, const Element& element, Document* doc) override {
    const absl::string_view sgml = element.text;
    const size_t open_end = sgml.find('>');
    const absl::string_view open_tag = sgml.substr(0, open_end);
    std::string id = AttributeText(open_tag, "id");
    if (id.empty()) {
      ReportBadDocument(file, element.line, "<doc> without an id attribute");
      return false;
    }
    doc->external_id = std::move(id);
    doc->location = Location(file, element.line);
    constexpr absl::string_view kClose = "</doc>";
    const absl::string_view body =
        sgml.substr(open_end + 1, sgml.size() - open_end - 1 - kClose.size());
    doc->text = std::string(absl::StripAsciiWhitespace(
        DecodeEntities(StripTags(SanitizeUtf8(body), TagPolicy::kKnownHtmlTags))));
    if (std::string title = AttributeText(open_tag, "title"); !title.empty()) {
      doc->fields.emplace_back("title", std::move(title));
    }
    if (std::string url = AttributeText(open_tag, "url"); !url.empty()) {
      doc->fields.emplace_back("url", std::move(url));
    }
    AddElementAttributes(body, &IsKnownHtmlTag, doc);
    return true;
  }
};

std::vector<AttributeField> WikiExtractorAttributeFields() {
  return {{"<tag>", AttributeType::kKeyword,
           "each short element of a <doc> body whose tag is no HTML or MediaWiki tag, named by "
           "its tag in lower case; the fields depend on the data"}};
}

}  // namespace

bool RecognizesWikiExtractor(absl::string_view head) {
  const absl::string_view line = absl::StripLeadingAsciiWhitespace(FirstNonBlankLine(head));
  return absl::StartsWith(line, "<doc ") && absl::StrContains(line, "id=");
}

// Extractor output directories (AA/, AB/, ...) hold nothing else; files go by wiki_NN or,
// flattened, AA_wiki_NN, so every file is read.
const FormatSpec kWikiExtractorFormat = {.name = "wikiextractor",
                                         .make = &MakeReader<WikiExtractorReader>,
                                         .recognizes = &RecognizesWikiExtractor,
                                         .starts_record = &StartsElementOf<kWikiExtractorTag>,
                                         .attribute_fields = &WikiExtractorAttributeFields};

}  // namespace tandem::index_builder::internal
