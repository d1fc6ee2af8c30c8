// TREC SGML reader: <DOC><DOCNO>id</DOCNO> ... <TEXT>...</TEXT></DOC>, the layout of the TREC disks
// (AP, WSJ, FT, LA Times, FBIS, FR) and of Robust04. Indexed are the headline elements and every
// <TEXT> element, with inner tags (<P>, <F P=...>) removed and entities decoded. Files are streamed
// document by document, since a TREC bundle can be gigabytes.
//
// A document with neither headline nor <TEXT> (TREC web collections such as WT10g and GOV2 put raw
// HTML after a <DOCHDR>) is indexed whole, minus its DOCNO/DOCOLDNO/DOCHDR elements, as HTML text.
//
// The other elements of a structured document are its metadata, and the short ones become
// attributes named by their tag in lower case: AP's <FILEID> and <DATELINE>, WSJ's <DD> and <SO>,
// the LA Times' <DATE> and <SECTION>, FBIS' <F P=...> ("f", several). A document indexed whole has
// none, all of it being text.
#include <array>
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
constexpr char kTrecTag[] = "DOC";

// Headline elements: HEADLINE (FT, LA Times), TITLE (generic), HEAD (AP), HL (WSJ).
constexpr std::array<absl::string_view, 4> kHeadlineTags = {"HEADLINE", "TITLE", "HEAD", "HL"};

// Elements that hold bookkeeping, not text, in the whole-document fallback.
constexpr std::array<absl::string_view, 3> kMetadataTags = {"DOCNO", "DOCOLDNO", "DOCHDR"};

// Elements that are no attribute: the id, the old id, the web header, and what is indexed.
bool IsTrecTextOrId(absl::string_view tag) {
  if (tag == "TEXT") return true;
  for (const absl::string_view t : kMetadataTags) {
    if (tag == t) return true;
  }
  for (const absl::string_view t : kHeadlineTags) {
    if (tag == t) return true;
  }
  return false;
}

// `doc` (the inside of <DOC>...</DOC>) without the elements named in `tags`.
std::string WithoutElements(absl::string_view doc, const std::array<absl::string_view, 3>& tags) {
  std::string kept(doc);
  for (const absl::string_view tag : tags) {
    const std::string open = absl::StrCat("<", tag, ">");
    const std::string close = absl::StrCat("</", tag, ">");
    size_t at;
    while ((at = kept.find(open)) != std::string::npos) {
      const size_t end = kept.find(close, at);
      if (end == std::string::npos) break;
      kept.erase(at, end + close.size() - at);
    }
  }
  return kept;
}

class TrecReader : public ElementReader {
 public:
  TrecReader(InputFiles files, ReaderOptions options)
      : ElementReader(std::move(files), std::move(options), kTrecTag) {}

 protected:
  bool ParseElement(const InputFile& file, const Element& element, Document* doc) override {
    const std::string id(absl::StripAsciiWhitespace(FirstElementContent(element.text, "DOCNO")));
    if (id.empty()) {
      ReportBadDocument(file, element.line, "document without a <DOCNO>");
      return false;
    }
    doc->external_id = SanitizeUtf8(id);
    doc->location = Location(file, element.line);
    Fill(element.text, doc);
    return true;
  }

 private:
  static void Fill(absl::string_view sgml, Document* doc) {
    bool structured = false;
    for (const absl::string_view tag : kHeadlineTags) {
      for (const absl::string_view headline : ElementContents(sgml, tag)) {
        structured = true;
        const std::string text = HtmlToText(headline);
        if (text.empty()) continue;
        if (doc->fields.empty()) doc->fields.emplace_back("title", CollapseWhitespace(text));
        AppendParagraph(text, &doc->text);
      }
    }
    for (const absl::string_view text : ElementContents(sgml, "TEXT")) {
      structured = true;
      AppendParagraph(HtmlToText(text), &doc->text);
    }
    // Inside the <DOC> tags.
    const size_t open_end = sgml.find('>');
    const size_t close = sgml.rfind("</DOC>");
    const absl::string_view inside = sgml.substr(open_end + 1, close - open_end - 1);
    if (structured) {
      AddElementAttributes(inside, &IsTrecTextOrId, doc);
      return;
    }
    // The bookkeeping elements go.
    doc->text = HtmlToText(WithoutElements(inside, kMetadataTags));
  }
};

std::vector<AttributeField> TrecAttributeFields() {
  return {{"<tag>", AttributeType::kKeyword,
           "each short element of a <DOC> that is neither indexed nor its id, named by its tag in "
           "lower case (<DATE>: date, <SO>: so); the fields depend on the collection"}};
}

}  // namespace

// SGML <DOC> elements with a <DOCNO> (not Reuters', whose <REUTERS> elements hold no <DOC>).
bool RecognizesTrec(absl::string_view head) {
  return absl::StrContains(head, "<DOC>") && absl::StrContains(head, "<DOCNO>");
}

const FormatSpec kTrecFormat = {.name = "trec",
                                .make = &MakeReader<TrecReader>,
                                .recognizes = &RecognizesTrec,
                                .starts_record = &StartsElementOf<kTrecTag>,
                                .attribute_fields = &TrecAttributeFields};

}  // namespace tandem::index_builder::internal
