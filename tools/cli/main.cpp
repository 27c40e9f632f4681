// tessera: the command-line program. Each subcommand lives in its own file.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "commands.h"
#include "tessera/log.h"
#include "tessera/mpi.h"

namespace tessera::cli {

int fail(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tessera: %s\n", message.c_str());
  return kExitError;
}

int usage_error(const std::string& message) {
  fail(message);
  return kExitUsage;
}

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 2 : int(n);
}

}  // namespace tessera::cli

namespace {

/// `mpirun -n N tessera CMD` without --mpi runs CMD N times side by side, each process
/// on its own: say so once (from the first rank) instead of printing N interleaved runs
/// silently. Open MPI's and the PMI launchers' variables tell a process it was started so.
void warn_mpirun_without_mpi() {
  auto number = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : -1;
  };
  int size = number("OMPI_COMM_WORLD_SIZE");
  int rank = number("OMPI_COMM_WORLD_RANK");
  if (size < 0) {
    size = number("PMI_SIZE");
    rank = number("PMI_RANK");
  }
  if (size > 1 && rank <= 0) {
    std::fprintf(stderr,
                 "tessera: warning: started by mpirun with %d ranks but without --mpi: every rank runs the whole "
                 "command on its own (add --mpi to split the model across the ranks)\n",
                 size);
  }
}

/// Every rank of `mpirun ... tessera CMD --mpi` starts here; ranks other than 0 follow
/// rank 0's commands instead of running CMD (tessera/mpi.h). Returns -1 on rank 0.
int start_mpi(int& argc, char**& argv) {
  bool wanted = false;
  for (int i = 1; i < argc; ++i) wanted = wanted || std::strcmp(argv[i], "--mpi") == 0;
  if (!wanted) {
    warn_mpirun_without_mpi();
    return -1;
  }
  const tessera::Status s = tessera::mpi::init(&argc, &argv);
  if (!s.is_ok()) return tessera::cli::fail(s.message());
  if (tessera::mpi::rank() != 0) return tessera::mpi::follow();
  std::atexit(tessera::mpi::finish);  // also after a command's error return
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::cli;
  if (const int follower = start_mpi(argc, argv); follower >= 0) return follower;
  CLI::App app{"tessera: run large language models stored as GGUF files"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what the engine does to stderr");

  const std::vector<Command> commands = {add_run(app), add_logits(app), add_inspect(app),
                                         add_synth(app), add_quantize(app), add_imatrix(app),
                                         add_bench(app), add_tokenize(app), add_embed(app),
                                         add_parallel(app), add_chat(app), add_perplexity(app),
                                         add_serve(app), add_train(app), add_finetune(app),
                                         add_lora_merge(app), add_template(app), add_convert(app),
                                         add_gguf_split(app)};

  // -v/--verbose is the program's, and may also follow the subcommand (tessera run -v ...):
  // options a subcommand does not know fall through to the program.
  for (const Command& c : commands) c.app->fallthrough();
  // One line per error, naming the problem (CLI11's own words after our prefix) and the
  // help that lists the flags involved: the subcommand's when there is one.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    std::string help = "tessera --help";
    for (const CLI::App* sub : a->get_subcommands()) help = "tessera " + sub->get_name() + " --help";
    return "tessera: " + std::string(e.what()) + " (see '" + help + "')\n";
  });
  if (argc >= 2 && argv[1][0] != '-') {
    bool known = false;
    for (const Command& c : commands) known = known || c.app->get_name() == argv[1];
    if (!known) {
      fail(std::string("unknown subcommand '") + argv[1] + "' (see 'tessera --help')");
      return kExitUsage;
    }
  }
  // Multi-letter short flags that CLI11 cannot declare (llama.cpp's spellings); without
  // this, -cnv would read as -c nv.
  static const std::pair<const char*, std::string> kLongShorts[] = {
      {"-np", "--parallel"},    {"-ngl", "--n-gpu-layers"}, {"-cnv", "--conversation"},
      {"-ub", "--ubatch-size"}, {"-fa", "--flash-attn"},
      {"-md", "--model-draft"},
      {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
  };
  static std::vector<std::string> rewritten;  // argv keeps pointers into it
  rewritten.reserve(size_t(argc));
  for (int i = 1; i < argc; ++i) {
    for (const auto& [short_flag, long_flag] : kLongShorts) {
      if (std::strcmp(argv[i], short_flag) == 0) argv[i] = rewritten.emplace_back(long_flag).data();
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 (CLI11's own codes,
    // 105-114, say which check failed, which no caller can act on).
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  tessera::set_log_level(verbose ? tessera::LogLevel::Info : tessera::LogLevel::Warn);
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  fail("no subcommand given (see 'tessera --help')");
  return kExitUsage;
}
