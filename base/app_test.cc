#include "base/app.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int32_t, app_test_count, 3, "A number of things.");
ABSL_FLAG(std::string, app_test_name, "", "A name.");
ABSL_FLAG(bool, app_test_verbose, false, "Say more.");
ABSL_FLAG(absl::Duration, app_test_wait, absl::Seconds(1), "How long to wait.");
ABSL_FLAG(int32_t, testing_app_test_hidden, 0, "Left out of --help.");

namespace tandem::base {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class AppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_app_test_count, 3);
    absl::SetFlag(&FLAGS_app_test_name, "");
    absl::SetFlag(&FLAGS_app_test_verbose, false);
    absl::SetFlag(&FLAGS_app_test_wait, absl::Seconds(1));
  }
};

TEST_F(AppTest, DashedAndUnderscoredNamesBothSetFlags) {
  absl::StatusOr<ParsedCommandLine> parsed =
      ParseArgs({"--app-test-count", "7", "build", "--app_test_name=x-y", "-app-test-verbose",
                 "--app-test-wait=250ms", "input"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->action, CommandLineAction::kRun);
  EXPECT_THAT(parsed->positional, ElementsAre("build", "input"));
  EXPECT_EQ(absl::GetFlag(FLAGS_app_test_count), 7);
  EXPECT_EQ(absl::GetFlag(FLAGS_app_test_name), "x-y");  // values keep their dashes
  EXPECT_TRUE(absl::GetFlag(FLAGS_app_test_verbose));
  EXPECT_EQ(absl::GetFlag(FLAGS_app_test_wait), absl::Milliseconds(250));
}

TEST_F(AppTest, BooleansNegationAndTheEndOfFlags) {
  absl::SetFlag(&FLAGS_app_test_verbose, true);
  absl::StatusOr<ParsedCommandLine> parsed =
      ParseArgs({"--noapp-test-verbose", "--", "--app-test-count=9", "-"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(absl::GetFlag(FLAGS_app_test_verbose));
  EXPECT_THAT(parsed->positional, ElementsAre("--app-test-count=9", "-"));
  EXPECT_EQ(absl::GetFlag(FLAGS_app_test_count), 3);
  ASSERT_TRUE(ParseArgs({"--app-test-verbose=false"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_app_test_verbose));
}

TEST_F(AppTest, BadFlagsNameTheFlagAsWritten) {
  const absl::Status unknown = ParseArgs({"--no-such-flag=1"}).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("--no-such-flag: unknown flag"));
  const absl::Status missing = ParseArgs({"--app-test-count"}).status();
  EXPECT_THAT(missing.message(), HasSubstr("--app-test-count: needs a value"));
  const absl::Status bad_number = ParseArgs({"--app-test-count=many"}).status();
  EXPECT_THAT(bad_number.message(), HasSubstr("--app-test-count: invalid value 'many'"));
  const absl::Status bad_duration = ParseArgs({"--app-test-wait", "soon"}).status();
  EXPECT_THAT(bad_duration.message(), HasSubstr("--app-test-wait:"));
  EXPECT_EQ(absl::GetFlag(FLAGS_app_test_count), 3);  // a failed parse leaves the flag alone
}

TEST_F(AppTest, FlagsOnlyProgramsRefuseAPositionalArgument) {
  char name[] = "tandem-test";
  char flag[] = "--app-test-count=4";
  char stray[] = "stray";
  char* with_stray[] = {name, flag, stray};
  EXPECT_EXIT(ParseFlagsOrExit(3, with_stray, {.name = "tandem-test"}),
              ::testing::ExitedWithCode(2),
              "tandem-test: unexpected argument 'stray' \\(see --help\\)");
  char* flags_only[] = {name, flag};
  ParseFlagsOrExit(2, flags_only, {.name = "tandem-test"});
  EXPECT_EQ(absl::GetFlag(FLAGS_app_test_count), 4);
}

TEST_F(AppTest, HelpListsOwnFlagsWithDashesAndDefaults) {
  const AppInfo app{
      .name = "app", .usage = "app does things.\n  app [--flags] FILE", .main_file = __FILE__};
  const std::string help = HelpText(app, /*full=*/false);
  EXPECT_THAT(help, HasSubstr("app does things."));
  EXPECT_THAT(help, HasSubstr("--app-test-count (default: 3)\n      A number of things."));
  EXPECT_THAT(help, HasSubstr("--app-test-wait (default: 1s)"));
  EXPECT_THAT(help, Not(HasSubstr("app_test")));
  EXPECT_THAT(help, Not(HasSubstr("hidden")));
  const std::string full = HelpText(app, /*full=*/true);
  EXPECT_THAT(full, HasSubstr("--testing-app-test-hidden"));
  for (const char* action : {"--help", "-h", "--helpfull", "--version"}) {
    absl::StatusOr<ParsedCommandLine> parsed = ParseArgs({"--app-test-count=5", action, "--bad"});
    ASSERT_TRUE(parsed.ok()) << action;
    EXPECT_NE(parsed->action, CommandLineAction::kRun) << action;
  }
}

TEST_F(AppTest, HelpListsTheSharedFilesFlagsAsItsOwn) {
  const AppInfo app{.name = "app",
                    .usage = "app does things.",
                    .main_file = "elsewhere.cc",
                    .shared_files = {__FILE__}};
  const std::string help = HelpText(app, /*full=*/false);
  EXPECT_THAT(help, HasSubstr("--app-test-count (default: 3)\n      A number of things."));
  EXPECT_THAT(help, Not(HasSubstr("hidden")));
  EXPECT_THAT(HelpText({.name = "app", .main_file = "elsewhere.cc"}, /*full=*/false),
              Not(HasSubstr("--app-test-count")));
}

// Flags defined outside the main file: --help leaves them out, --helpfull lists them under their
// groups' titles in the groups' order, and those of no group after them.
TEST_F(AppTest, HelpfullListsTheOtherFilesFlagsByGroup) {
  const AppInfo app{.name = "app",
                    .usage = "app does things.",
                    .main_file = "elsewhere.cc",
                    .groups = {{.title = "Waiting", .flags = {"app-test-wait", "app-test-count"}},
                               {.title = "Talking", .flags = {"app-test-verbose", "no-such"}}}};
  const std::string help = HelpText(app, /*full=*/false);
  EXPECT_THAT(help, Not(HasSubstr("--app-test")));
  EXPECT_THAT(help, HasSubstr("--helpfull also lists the expert and tuning flags"));
  const std::string full = HelpText(app, /*full=*/true);
  const size_t waiting = full.find("\nWaiting:\n  --app-test-wait (default: 1s)\n");
  const size_t count = full.find("--app-test-count (default: 3)");
  const size_t talking = full.find("\nTalking:\n  --app-test-verbose (default: false)\n");
  const size_t other = full.find("\nOther flags:\n");
  const size_t name = full.find("--app-test-name");
  ASSERT_NE(waiting, std::string::npos) << full;
  ASSERT_NE(talking, std::string::npos) << full;
  ASSERT_NE(other, std::string::npos) << full;
  EXPECT_LT(waiting, count);
  EXPECT_LT(count, talking);
  EXPECT_LT(talking, other);
  EXPECT_LT(other, name);
  EXPECT_THAT(full, Not(HasSubstr("no-such")));
}

}  // namespace
}  // namespace tandem::base
