// The command line's conventions (issue 31, findings 3, 5, 6): exit statuses 0 / 1
// (an error while running) / 2 (usage) as README's "Exit status" says; usage errors name
// the help of the subcommand involved; -v works after the subcommand too; one prefix,
// "tessera: ", for every message on stderr.
#include <gtest/gtest.h>

#include <string>

#include "common/cli_run.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using test::CliOutput;
using test::run_tessera;

TEST(CliUsage, UsageErrorsExitTwoAndNameTheSubcommandsHelp) {
  struct Case {
    std::string args;
    std::string help;  // the help the message names
  };
  const Case cases[] = {
      {"run -p hi -n 4 --no-such-flag", "tessera run --help"},
      {"bench -o", "tessera bench --help"},
      {"quantize", "tessera quantize --help"},
      {"serve --port abc", "tessera serve --help"},
      {"tokenize -p hi --ids --pieces --no-such", "tessera tokenize --help"},
      {"no-such-command", "tessera --help"},
      {"", "tessera --help"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CliOutput o = run_tessera(c.args);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find("(see '" + c.help + "')"), std::string::npos) << o.err;
    EXPECT_EQ(o.err.rfind("tessera: ", 0), 0u) << o.err;
  }
  for (const std::string ok : {"--help", "--version", "run --help", "bench --help"}) {
    EXPECT_EQ(run_tessera(ok).status, 0) << ok;
  }
}

TEST(CliUsage, AnErrorWhileRunningExitsOne) {
  const std::string not_a_model = test::write_temp_file("not_a_model.gguf", "this is not a GGUF file");
  const CliOutput o = run_tessera("run -m " + not_a_model + " -p hi -n 2");
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.err.find(not_a_model), std::string::npos) << o.err;
}

// -v is the program's flag; llama.cpp users put it after the subcommand.
TEST(CliUsage, VerboseWorksBeforeAndAfterTheSubcommand) {
  const CliOutput before = run_tessera("-v run -p hi -n 2 -t 1");
  const CliOutput after = run_tessera("run -p hi -n 2 -t 1 -v");
  const CliOutput quiet = run_tessera("run -p hi -n 2 -t 1");
  ASSERT_EQ(before.status, 0) << before.err;
  ASSERT_EQ(after.status, 0) << after.err;
  // The built-in model is repacked at load, which the engine logs at the info level.
  EXPECT_NE(before.err.find("tessera: info: "), std::string::npos) << before.err;
  EXPECT_NE(after.err.find("tessera: info: "), std::string::npos) << after.err;
  EXPECT_EQ(quiet.err.find("info"), std::string::npos) << quiet.err;
}

}  // namespace
}  // namespace tessera
