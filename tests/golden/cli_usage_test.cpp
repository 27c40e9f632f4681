// The command line's conventions (issue 31, findings 3, 5, 6): exit statuses 0 / 1
// (an error while running) / 2 (usage) as README's "Exit status" says; usage errors name
// the help of the subcommand involved; -v works after the subcommand too; one prefix,
// "tessera: ", for every message on stderr.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "backend/registry.h"
#include "common/cli_run.h"
#include "common/lora_test_util.h"
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

// llama.cpp's -ngl in a build without CUDA (or on a machine without a GPU) warns and runs
// on the CPU: scripts carry -ngl 99 from machine to machine.
TEST(CliUsage, GpuLayersWithoutAGpuWarnAndRunOnTheCpu) {
  if (backends::devices("CUDA")) GTEST_SKIP() << "this build has a GPU to offload to";
  const CliOutput o = run_tessera("run -ngl 99 -p hi -n 2 -t 1");
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("tessera: warning: -ngl 99 ignored"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("running on the CPU"), std::string::npos) << o.err;
}

// A value that is not a number says so (was "not in range"); one out of range names it.
TEST(CliUsage, ANonNumberIsNamedAsOne) {
  const CliOutput abc = run_tessera("run -p hi -n abc");
  EXPECT_EQ(abc.status, 2) << abc.err;
  EXPECT_NE(abc.err.find("--n-predict: 'abc' is not a whole number"), std::string::npos) << abc.err;
  const CliOutput hot = run_tessera("run -p hi --temp hot");
  EXPECT_NE(hot.err.find("--temp: 'hot' is not a number"), std::string::npos) << hot.err;
  const CliOutput big = run_tessera("bench -r 5000");
  EXPECT_EQ(big.status, 2) << big.err;
  EXPECT_NE(big.err.find("5000 is out of range: 1 to 1000"), std::string::npos) << big.err;
}

// A LoRA adapter given as the model says what it is, and how to use it.
TEST(CliUsage, AnAdapterGivenAsTheModelIsNamedAsOne) {
  TESSERA_REQUIRE_SHARED(base, "models/stories260K.gguf");
  Result<test::AdapterFile> adapter = test::adapter_for(base, {"blk.0.attn_q.weight"}, 2);
  ASSERT_TRUE(adapter) << adapter.status().message();
  const std::string path = test::temp_gguf("adapter_as_model");
  ASSERT_TRUE(test::write_adapter(*adapter, path));
  const CliOutput o = run_tessera("run -m " + path + " -p hi -n 2");
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.err.find("is an adapter (general.type = adapter)"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--lora"), std::string::npos) << o.err;
}

// serve says why it cannot listen.
TEST(CliUsage, ServeSaysWhyItCannotListen) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const CliOutput o = run_tessera("serve --host 127.0.0.1 --port " + std::to_string(ntohs(addr.sin_port)));
  ::close(fd);
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.err.find("Address already in use"), std::string::npos) << o.err;
}

// -c 0 is "the model's context" in perplexity as in run; too small a context is a usage error.
TEST(CliUsage, PerplexityContextZeroIsTheModels) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  std::string text;
  for (int i = 0; i < 60; ++i) text += "The little dog ran to the park and played with the ball. ";
  const std::string file = test::write_temp_file("ppl.txt", text);
  const CliOutput zero = run_tessera("perplexity -m " + model + " -f " + file + " -c 0 --chunks 1 -t 1");
  EXPECT_EQ(zero.status, 0) << zero.err;
  EXPECT_NE(zero.err.find("context 128"), std::string::npos) << zero.err;  // stories260K's training context
  const CliOutput tiny = run_tessera("perplexity -m " + model + " -f " + file + " -c 2 -t 1");
  EXPECT_EQ(tiny.status, 2) << tiny.err;
}

// embed warns past the training context, as run does.
TEST(CliUsage, EmbedWarnsPastTheTrainingContext) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  std::string text;
  for (int i = 0; i < 80; ++i) text += "once upon a time ";
  const CliOutput o = run_tessera("embed -m " + model + " -t 1 -p '" + text + "'");
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("exceed the model's training context of 128"), std::string::npos) << o.err;
}

// mpirun without --mpi: the first rank says that every rank runs the whole command (the
// launcher's variables, set here as Open MPI sets them, are what tessera reads).
TEST(CliUsage, MpirunWithoutMpiWarnsOnce) {
  const std::string args = " run -p hi -n 2 -t 1";
  const CliOutput first = test::run_shell("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 " + test::cli_path() + args);
  const CliOutput second = test::run_shell("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 " + test::cli_path() + args);
  const CliOutput alone = test::run_shell("OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_RANK=0 " + test::cli_path() + args);
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.err.find("started by mpirun with 2 ranks but without --mpi"), std::string::npos) << first.err;
  EXPECT_EQ(second.err.find("without --mpi"), std::string::npos) << second.err;
  EXPECT_EQ(alone.err.find("without --mpi"), std::string::npos) << alone.err;
}

}  // namespace
}  // namespace tessera
