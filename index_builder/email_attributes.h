// File: email_attributes.h
//
// What the e-mail reader's attributes are read from: the sender's domain in a From header, the
// year and month of a Date header, and a spam / ham label in a path or a record's group. Each
// tolerates what real mail holds (obsolete date forms, comments, quoted names) and gives nothing
// rather than a guess when the text does not say.
//
//   SenderDomain("\"Doe, J.\" <jd@Example.COM>");        // "example.com"
//   ParseMailDate("Thu, 22 Aug 02 18:26:25 +0700");       // {2002, 8}
//   SpamHamLabel("easy_ham");                              // "ham"
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "index_builder/readers_internal.h"

namespace tandem::index_builder::internal {

// The domain of the first mailbox of a From header's value (RFC 5322 section 3.4: a name-addr
// "Name <local@domain>" or an addr-spec, comments and quoted strings allowed), in lower case; ""
// when there is no "@domain" made of letters, digits, "-", "." and non-ASCII bytes.
std::string SenderDomain(absl::string_view from);

struct MailMonth {
  int year = 0;
  int month = 0;  // 1..12
};

// The year and month of a Date header's value: RFC 5322's date-time ("Thu, 22 Aug 2002 ..."), its
// obsolete two- and three-digit years (section 4.3: 02 is 2002, 99 is 1999, 102 is 2002), the
// forms mailers wrote instead (asctime's "Thu Aug 22 18:26:25 2002", "22-Aug-2002", full month
// names, "August 22, 2002") and ISO 8601's "2002-08-22". nullopt when no month name, or no year
// in 1900..2099, can be told.
std::optional<MailMonth> ParseMailDate(absl::string_view date);

// "spam" or "ham" when a word of `name` (its runs of letters, any case) is "spam" or "ham" and no
// other word is the other one ("spam_2", "easy_ham", "easy-ham-1"); "" otherwise ("spamassassin").
std::string SpamHamLabel(absl::string_view name);

// The label of a message file from its path: the nearest directory of its path relative to the
// input, then the input directory's own name (the file's directory for a single file), that
// SpamHamLabel labels; "" when none does.
std::string SpamHamLabelOfPath(const InputFile& file);

}  // namespace tandem::index_builder::internal
