// A model split across the ranks of an MPI job (mpirun -n 2 and -n 3 on this machine,
// one thread per rank) against one process: the same greedy tokens and logits (NMSE
// <= 1e-6) for `logits` and `run`, the same perplexity, the same tokens for a batch of 4
// sequences (`parallel`), clear errors for bad --mpi-layers, and a rank killed mid-run
// ending the job within seconds with a message. Skips without an MPI build or mpirun.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include <httplib.h>

#include "common/cli_run.h"
#include "common/server_process.h"
#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "tessera/mpi.h"

namespace tessera {
namespace {

// In the sanitizer build the ranks run without LeakSanitizer: OpenMPI keeps allocations
// of the plugins it loads and unloads until exit, and their stacks end in unloaded
// modules that no suppression can name. AddressSanitizer and UBSan stay on; the same
// scheduler paths run leak-checked in one process (scheduler_split_test.cpp).
std::string rank_asan_options() {
  const char* env = std::getenv("ASAN_OPTIONS");
  return std::string(env ? env : "") + ":detect_leaks=0";
}

/// mpirun's arguments: --oversubscribe (more ranks than this machine's cores),
/// --allow-run-as-root (CI runs as root), the ranks' ASAN_OPTIONS.
std::vector<std::string> mpirun_args(int n) {
  return {"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
          "-x",     "ASAN_OPTIONS=" + rank_asan_options(), "-n", std::to_string(n)};
}

std::string mpirun(int n) {
  std::string cmd;
  for (const std::string& a : mpirun_args(n)) cmd += "'" + a + "' ";
  return cmd;
}

class Mpi : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!mpi::built()) GTEST_SKIP() << "this build has no MPI (-DTESSERA_MPI=ON)";
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun absent";
    model_ = test::shared_file("models/" + GetParam());
    if (model_.empty()) GTEST_SKIP() << "shared file absent: models/" << GetParam();
  }
  /// `tessera ARGS` alone, then on 2 and 3 ranks: the outputs, in that order.
  std::vector<test::CliOutput> on_ranks(const std::string& args) {
    std::vector<test::CliOutput> out{test::run_tessera(args)};
    for (int n : {2, 3}) out.push_back(test::run_shell(mpirun(n) + test::cli_path() + " " + args + " --mpi"));
    for (const test::CliOutput& o : out) EXPECT_EQ(o.status, 0) << o.err;
    return out;
  }
  std::string model_;
};

TEST_P(Mpi, GreedyTokensAndLogitsMatchOneProcess) {
  const std::vector<test::CliOutput> out = on_ranks("logits -m " + model_ + " -p 'Once upon a time, a girl' -n 12 -t 1");
  const nlohmann::json ref = nlohmann::json::parse(out[0].out);
  for (size_t i = 1; i < out.size(); ++i) {
    const nlohmann::json got = nlohmann::json::parse(out[i].out);
    EXPECT_EQ(got["greedy"], ref["greedy"]) << (i + 1) << " ranks";
    const std::vector<float> a = got["logits_last_prompt"].get<std::vector<float>>();
    const std::vector<float> b = ref["logits_last_prompt"].get<std::vector<float>>();
    EXPECT_LE(test::nmse(a, b), 1e-6) << (i + 1) << " ranks";
  }
  const std::vector<test::CliOutput> run = on_ranks("run -m " + model_ + " -p 'The little dog' -n 24 --temp 0 -t 1");
  EXPECT_FALSE(run[0].out.empty());
  EXPECT_EQ(run[1].out, run[0].out);
  EXPECT_EQ(run[2].out, run[0].out);
}

TEST_P(Mpi, PerplexityIsTheSame) {
  const std::string text = test::write_temp_file("mpi_ppl", std::string(
      "One day, a little girl named Lily found a needle in her room. She knew it was difficult to play "
      "with it because it was sharp. Lily wanted to share the needle with her mom, so she could sew a "
      "button on her shirt. Lily went to her mom and said, Mom, I found this needle. Can you share it "
      "with me and sew my shirt? Her mom smiled and said, Yes, Lily, we can share the needle and fix "
      "your shirt. Together, they shared the needle and sewed the button on Lily's shirt."));
  const std::vector<test::CliOutput> out = on_ranks("perplexity -m " + model_ + " -f " + text + " -c 64 -t 1");
  auto value = [](const std::string& s) {
    const size_t at = s.find("Final estimate: PPL = ");
    return at == std::string::npos ? std::string() : s.substr(at, s.find('\n', at) - at);
  };
  const std::string ref = value(out[0].out + out[0].err);
  ASSERT_FALSE(ref.empty()) << out[0].out << out[0].err;
  EXPECT_EQ(value(out[1].out + out[1].err), ref);
  EXPECT_EQ(value(out[2].out + out[2].err), ref);
  std::remove(text.c_str());
}

TEST_P(Mpi, BatchOfFourSequencesGivesTheSameTokens) {
  const std::vector<test::CliOutput> out = on_ranks("parallel -m " + model_ + " --clients 4 -n 10 --json -t 1");
  auto tokens = [](const std::string& s) {
    std::vector<std::vector<int>> t;
    const nlohmann::json j = nlohmann::json::parse(s);
    for (const nlohmann::json& r : j["requests"]) t.push_back(r["tokens"].get<std::vector<int>>());
    return t;
  };
  const auto ref = tokens(out[0].out);
  ASSERT_EQ(ref.size(), 4u);
  EXPECT_EQ(tokens(out[1].out), ref);
  EXPECT_EQ(tokens(out[2].out), ref);
}

TEST_P(Mpi, ServesHttpFromRankZero) {
  std::string error;
  auto server = test::ServerProcess::start({"-m", model_, "-t", "1", "--mpi"}, &error, mpirun_args(2));
  ASSERT_TRUE(server) << error;
  httplib::Client client("127.0.0.1", server->port());
  client.set_read_timeout(60, 0);
  const std::string body = R"({"prompt": "The little dog", "max_tokens": 12, "temperature": 0})";
  httplib::Result r = client.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(r) << server->log();
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string text = nlohmann::json::parse(r->body)["choices"][0]["text"].get<std::string>();
  const test::CliOutput alone = test::run_tessera("run -m " + model_ + " -p 'The little dog' -n 12 --temp 0 -t 1");
  EXPECT_EQ("The little dog" + text + "\n", alone.out);
  server->stop(std::chrono::seconds(20));  // mpirun passes the SIGTERM to every rank
  EXPECT_FALSE(server->running());
}

INSTANTIATE_TEST_SUITE_P(Llama, Mpi, ::testing::Values("stories260K.gguf", "mini-llama-Q4_0.gguf"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param == "stories260K.gguf" ? std::string("stories260K") : std::string("mini_llama");
                         });

class MpiJob : public Mpi {};

TEST_P(MpiJob, BadLayerCountsAreRefusedByRankZero) {
  const test::CliOutput o =
      test::run_shell(mpirun(2) + test::cli_path() + " run -m " + model_ + " -p hi -n 2 -t 1 --mpi --mpi-layers 2,2");
  EXPECT_NE(o.status, 0);
  EXPECT_NE(o.err.find("--mpi-layers: the counts add up to 4 layers, but the model has 5"), std::string::npos) << o.err;
  const test::CliOutput three =
      test::run_shell(mpirun(2) + test::cli_path() + " run -m " + model_ + " -p hi -n 2 -t 1 --mpi --mpi-layers 1,1,3");
  EXPECT_NE(three.status, 0);
  EXPECT_NE(three.err.find("3 counts for 2 ranks"), std::string::npos) << three.err;
  const test::CliOutput ok =
      test::run_shell(mpirun(2) + test::cli_path() + " run -m " + model_ + " -p hi -n 4 --temp 0 -t 1 --mpi --mpi-layers 1,4");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, test::run_tessera("run -m " + model_ + " -p hi -n 4 --temp 0 -t 1").out);
}

/// The pid of the process of `rank` among the children of `parent` (its environment names it).
pid_t rank_pid(pid_t parent, int rank) {
  DIR* d = opendir("/proc");
  pid_t found = -1;
  for (dirent* e; d && (e = readdir(d)) != nullptr && found < 0;) {
    const pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string comm, state;
    pid_t pid_read = 0, ppid = 0;
    if (!(stat >> pid_read >> comm >> state >> ppid) || ppid != parent) continue;
    std::ifstream env("/proc/" + std::to_string(pid) + "/environ");
    const std::string vars((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    const std::string want = std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0';
    if (vars.find(want) != std::string::npos) found = pid;
  }
  if (d) closedir(d);
  return found;
}

TEST_P(MpiJob, AKilledRankEndsTheJobWithinSeconds) {
  const std::string err = test::write_temp_file("mpi_kill_err", "");
  const std::string cmd = mpirun(2) + test::cli_path() + " run -m " + model_ +
                          " -p 'Once upon a time' -n 100000 -c 256 --ignore-eos -t 1 --mpi >/dev/null 2>" + err;
  const pid_t job = fork();
  ASSERT_GE(job, 0);
  if (job == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until rank 1 runs (and has had time to start decoding), then kill it.
  pid_t victim = -1;
  for (int i = 0; i < 600 && victim < 0; ++i) {  // 30 s: sanitizer builds load slowly
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    victim = rank_pid(job, 1);
  }
  ASSERT_GT(victim, 0) << "rank 1 never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(job, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() - killed < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    kill(-job, SIGKILL);
    waitpid(job, &status, 0);
    FAIL() << "the job was still running 20 s after rank 1 died";
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(seconds, 10.0);
  EXPECT_TRUE(!WIFEXITED(status) || WEXITSTATUS(status) != 0) << "the job ended as if nothing happened";
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  std::remove(err.c_str());
}

INSTANTIATE_TEST_SUITE_P(Stories, MpiJob, ::testing::Values("stories260K.gguf"),
                         [](const ::testing::TestParamInfo<std::string>&) { return std::string("stories260K"); });

}  // namespace
}  // namespace tessera
