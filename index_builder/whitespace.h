// File: whitespace.h
//
// Where white space goes when a reader assembles a document: indexed parts (title, abstract, body)
// are joined one paragraph each, and stored fields are shown on one line.
//
//   std::string text;
//   AppendParagraph(title, &text);  // "title"
//   AppendParagraph(body, &text);   // "title\nbody"
//   fields.emplace_back("title", CollapseWhitespace(" Rates &\n markets "));  // "Rates & markets"
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

// Appends `part` to *text, separated by a newline when both are non-empty. Used to join a title and
// a body the way BEIR's "title + \n + text" convention does.
void AppendParagraph(absl::string_view part, std::string* text);

// `text` with every run of ASCII white space turned into one space and none at either end: stored
// fields such as titles are shown on one line.
std::string CollapseWhitespace(absl::string_view text);

}  // namespace tandem::index_builder
