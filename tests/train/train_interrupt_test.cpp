// `tessera train` and `finetune` stopped by a signal, as Ctrl-C stops them: the run saves
// its work, prints the command that continues it and exits 130, and the continued run
// writes the same model, byte for byte, as a run never interrupted (and a log without
// repeated steps). The signal is sent once a step line has been read from the process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/cli_run.h"
#include "common/test_util.h"

namespace tessera::test {
namespace {

std::string text() {
  std::string s;
  for (int i = 0; i < 120; ++i) s += "in the beginning was the word, and the word was with god.\n";
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A model whose steps take some milliseconds, so that the signal lands mid-run.
const std::string kRun =
    " --vocab-size 300 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --ctx-size 32 --batch 4 -t 1 "
    "--steps 40"
    " --eval-every 10 --print-every 1";

struct Stopped {
  int status = -1;
  std::string err;
};

// Runs `tessera <args>` (split on spaces; no quoting needed by the callers), sends
// `signals` times `sig` once stderr shows a line starting with `wait_for`, and collects
// stderr until the process exits.
Stopped run_and_interrupt(const std::vector<std::string>& args, const std::string& wait_for,
                          int signals, int sig = SIGINT) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    std::string cli = cli_path();
    argv.push_back(cli.data());
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  Stopped r;
  bool sent = false;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) {
    r.err.append(buf, size_t(n));
    if (!sent && (r.err.find("\n" + wait_for) != std::string::npos)) {
      for (int i = 0; i < signals; ++i) kill(pid, sig);
      sent = true;
    }
  }
  close(fds[0]);
  int raw = 0;
  waitpid(pid, &raw, 0);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The command printed after "resume with:", without its leading "tessera".
std::string resume_args(const std::string& err) {
  const std::string head = "resume with:\n  tessera ";
  const size_t at = err.find(head);
  if (at == std::string::npos) return "";
  const size_t from = at + head.size();
  return err.substr(from, err.find('\n', from) - from);
}

TEST(TrainInterrupt, CtrlCSavesACheckpointThatResumesBitIdenticallyWithoutRepeatingLogRows) {
  const std::string txt = write_temp_file("interrupt_text", text());
  const std::string straight = txt + ".straight.gguf", resumed = txt + ".gguf", log = txt + ".csv";
  CliOutput r =
      run_tessera("train -f " + txt + " -o " + straight + kRun + " --log " + straight + ".csv");
  ASSERT_EQ(r.status, 0) << r.err;

  // Stopped after its first step by two SIGINTs in a row (a user pressing Ctrl-C again
  // while the checkpoint is saved).
  Stopped s = run_and_interrupt(
      split("train -f " + txt + " -o " + resumed + kRun + " --log " + log), "step 1/40", 2);
  ASSERT_EQ(s.status, 130) << s.err;
  EXPECT_NE(s.err.find("tessera train: interrupted; step "), std::string::npos) << s.err;
  std::string args = resume_args(s.err);
  ASSERT_EQ(args, "train -f " + txt + " -o " + resumed + " --resume " + resumed +
                      ".ckpt -t 1 --steps 40 --log " + log)
      << s.err;
  EXPECT_FALSE(std::filesystem::exists(resumed)) << "the model is written only at the end";
  EXPECT_FALSE(std::filesystem::exists(resumed + ".ckpt.tmp"));

  // The continued run, stopped again mid-way, then run to the end.
  s = run_and_interrupt(split(args + " --print-every 1"), "step ", 1);
  ASSERT_EQ(s.status, 130) << s.err;
  ASSERT_EQ(resume_args(s.err), args) << s.err;
  r = run_tessera(args);
  ASSERT_EQ(r.status, 0) << r.err;

  EXPECT_EQ(slurp(resumed), slurp(straight)) << "the resumed model differs from the straight run's";
  // The logs agree on every step's loss, each step once (tokens/s differ).
  auto steps_and_losses = [](const std::string& csv) {
    std::istringstream in(csv);
    std::string out;
    for (std::string line; std::getline(in, line);)
      out += line.substr(0, line.find(',', line.find(',') + 1)) + "\n";
    return out;
  };
  EXPECT_EQ(steps_and_losses(slurp(log)), steps_and_losses(slurp(straight + ".csv")));
}

// --checkpoint-minutes saves the run by time even when it is killed outright (SIGKILL,
// no chance to save): here every 0.0005 minutes (30 ms) of a run whose steps take some.
TEST(TrainInterrupt, ACheckpointByTimeSurvivesAKill) {
  const std::string txt = write_temp_file("interrupt_text", text());
  const std::string model = txt + ".gguf";
  std::string run = kRun;
  run.replace(run.find("--steps 40"), 10, "--steps 400");
  const Stopped s = run_and_interrupt(
      split("train -f " + txt + " -o " + model + run + " --checkpoint-minutes 0.0005"), "step 12/",
      1, SIGKILL);
  const std::string& err = s.err;
  EXPECT_EQ(s.status, -1) << err;
  ASSERT_TRUE(std::filesystem::exists(model + ".ckpt")) << err;
  const CliOutput r = run_tessera("inspect " + model + ".ckpt");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("training.step"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(model)) << "the run was killed before its end";
}

TEST(TrainInterrupt, ResumingOnAnotherTextIsRefusedUnlessForced) {
  const std::string txt = write_temp_file("interrupt_text", text());
  const std::string other = write_temp_file("interrupt_other", text() + "and more.\n");
  const std::string model = txt + ".gguf";
  CliOutput r = run_tessera("train -f " + txt + " -o " + model + kRun + " --stop-at 2");
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_tessera("train -f " + other + " -o " + model + " --resume " + model + ".ckpt -t 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("was trained on '" + txt + "', but -f '" + other +
                       "' is another text (pass --force"),
            std::string::npos)
      << r.err;
  r = run_tessera("train -f " + other + " -o " + model + " --resume " + model +
                  ".ckpt -t 1 --force --stop-at 3");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(TrainInterrupt, FinetuneSavesTheAdapterOnCtrlC) {
  const std::string txt = write_temp_file("interrupt_ft_text", text());
  const std::string base = txt + ".base.gguf", adapter = txt + ".lora.gguf";
  CliOutput r = run_tessera("train -f " + txt + " -o " + base + kRun + " --stop-at 1");
  ASSERT_EQ(r.status, 0) << r.err;
  Stopped s =
      run_and_interrupt(split("finetune -m " + base + " -f " + txt + " -o " + adapter +
                              " -c 32 --batch 4 -t 1 --steps 400 --eval-every 0 --print-every 1"),
                        "step 1/400", 1);
  ASSERT_EQ(s.status, 130) << s.err;
  EXPECT_NE(s.err.find("tessera finetune: interrupted; wrote " + adapter + ", the adapter after "),
            std::string::npos)
      << s.err;
  r = run_tessera("run -m " + base + " --lora " + adapter + " -p 'in the' -n 2 --temp 0");
  EXPECT_EQ(r.status, 0) << r.err;
}

}  // namespace
}  // namespace tessera::test
