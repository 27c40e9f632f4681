// `tessera chat`: an interactive conversation in the terminal. Lines typed on stdin are
// user turns; replies stream to stdout; prompts, notes and errors go to stderr, so
// stdout holds only the replies when it is piped.
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "tessera/chat.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

struct ChatOptions {
  std::string model;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]
  PlacementOptions placement;     // --layers, --mpi, --mpi-layers
  std::string system;
  std::string chat_template;
  int n_predict = -1;
  int threads = default_threads();
  int64_t ctx = 0;
  float temperature = 0.8f;
  uint64_t seed = 0;
};

// Ctrl-C: counted by the handler, read by the loops (a reply stops, the prompt warns,
// then quits).
std::atomic<int> g_interrupts{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigint(int) { g_interrupts.fetch_add(1, std::memory_order_relaxed); }

void install_sigint_handler() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: Ctrl-C interrupts a read() waiting at the prompt
  sigaction(SIGINT, &sa, nullptr);
}

enum class Input { Line, End, Interrupted };

/// Waits until stdin has input, or until a Ctrl-C that came after `seen` interrupts. SIGINT
/// is blocked between the check of the counter and the wait, and ppoll unblocks it
/// atomically, so a Ctrl-C cannot slip in between and be missed.
bool wait_for_input(int seen) {
  sigset_t sigint, old;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint, &old);
  bool ready = g_interrupts.load() == seen;
  if (ready) {
    struct pollfd in = {STDIN_FILENO, POLLIN, 0};
    ready = ppoll(&in, 1, nullptr, &old) >= 0 || errno != EINTR;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ready;
}

/// Lines from stdin, read with read(2) so that Ctrl-C can interrupt the wait.
class LineReader {
 public:
  /// The next line (without its newline); Interrupted when a Ctrl-C after `seen` came first.
  Input next(std::string& line, int seen) {
    for (;;) {
      if (const size_t nl = buf_.find('\n'); nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Input::Line;
      }
      if (eof_) {
        if (buf_.empty()) return Input::End;
        line = std::move(buf_);
        buf_.clear();
        return Input::Line;
      }
      if (!wait_for_input(seen)) return Input::Interrupted;
      char chunk[4096];
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, size_t(n));
      } else if (n < 0 && errno == EINTR) {
        return Input::Interrupted;
      } else {
        eof_ = true;  // end of input, or an error reading it
      }
    }
  }

 private:
  std::string buf_;
  bool eof_ = false;
};

void show(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

enum class ReplyEnd { Done, Limit, Interrupted, ContextFull };

/// Samples, streams and closes one reply. Errors are library errors (fatal).
Result<ReplyEnd> reply(ChatSession& session, SamplerChain& sampler, int n_predict,
                       int& seen_interrupts) {
  ReplyEnd end = ReplyEnd::Limit;
  for (int n = 0; n_predict < 0 || n < n_predict; ++n) {
    if (const int now = g_interrupts.load(); now != seen_interrupts) {
      seen_interrupts = now;
      end = ReplyEnd::Interrupted;
      break;
    }
    if (session.context_full()) {
      end = ReplyEnd::ContextFull;
      break;
    }
    Result<TokenId> token = sampler.sample(session.logits());
    if (!token) return token.status();
    TESSERA_RETURN_IF_ERROR(sampler.accept(*token));
    Result<ReplyStep> step = session.push(*token);
    if (!step) return step.status();
    show(step->text);
    if (step->done) {
      end = ReplyEnd::Done;
      break;
    }
  }
  Result<std::string> rest = session.end_reply();
  if (!rest) return rest.status();
  show(*rest + "\n");
  return end;
}

void report_reply_end(ReplyEnd end, const Context& ctx) {
  if (end == ReplyEnd::Interrupted) std::fputs("[reply stopped]\n", stderr);
  if (end == ReplyEnd::ContextFull) {
    std::fprintf(stderr,
                 "tessera: the context is full (%lld tokens), so the reply stops here; "
                 "/clear starts a new conversation (or restart with a larger -c)\n",
                 static_cast<long long>(ctx.n_ctx()));
  }
}

struct Chat {
  std::unique_ptr<Model> model;
  std::unique_ptr<Context> ctx;
  ChatTemplate chat_template;
};

Result<Chat> open_chat(const ChatOptions& o) {
  Chat c;
  Result<ModelParams> mp = model_params(o.lora);
  if (mp) apply_placement(o.placement, *mp);
  if (!mp) return mp.status();
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, *mp);
  if (!model) return model.status();
  c.model = std::move(*model);
  if (!c.model->tokenizer()) {
    return Status::error(o.model + ": the model has no usable tokenizer, so it cannot chat");
  }
  Result<ChatTemplate> tmpl = ChatTemplate::for_model(*c.model, o.chat_template);
  if (!tmpl) return tmpl.status();
  c.chat_template = *tmpl;
  ContextParams cp;
  cp.n_ctx = o.ctx;
  cp.n_threads = o.threads;
  Result<std::unique_ptr<Context>> ctx = Context::create(*c.model, cp);
  if (!ctx) return ctx.status();
  c.ctx = std::move(*ctx);
  const int64_t n_train = c.model->info().n_ctx_train;
  if (n_train > 0 && c.ctx->n_ctx() > n_train) {
    std::fprintf(
        stderr,
        "tessera: warning: a context of %lld tokens is beyond the %lld the model was trained on\n",
        static_cast<long long>(c.ctx->n_ctx()), static_cast<long long>(n_train));
  }
  return c;
}

SamplerParams sampling(const ChatOptions& o) {
  SamplerParams p;
  p.temperature = o.temperature;
  p.seed = o.seed;
  return p;
}

/// The terminal side of a chat: prompts, commands, Ctrl-C, and one reply per turn.
class ChatLoop {
 public:
  ChatLoop(Chat& chat, const ChatOptions& o, SamplerChain sampler)
      : chat_(chat),
        session_(*chat.ctx, *chat.model->tokenizer(), chat.chat_template, o.system),
        sampler_(std::move(sampler)),
        n_predict_(o.n_predict),
        tty_(isatty(STDIN_FILENO) != 0) {}

  int run() {
    install_sigint_handler();
    seen_ = g_interrupts.load();
    if (tty_) {
      std::fprintf(stderr,
                   "tessera chat: template %s, context %lld tokens. /clear starts over, "
                   "/exit or Ctrl-D quits, Ctrl-C stops a reply.\n",
                   std::string(chat_.chat_template.name()).c_str(),
                   static_cast<long long>(chat_.ctx->n_ctx()));
    }
    std::string line;
    while (next_message(line)) {
      if (Status s = session_.add_user_message(line); !s) {
        std::fprintf(stderr, "tessera: %s; /clear starts a new conversation\n",
                     s.message().c_str());
        continue;
      }
      Result<ReplyEnd> end = reply(session_, sampler_, n_predict_, seen_);
      if (!end) return fail(end.status().message());
      report_reply_end(*end, *chat_.ctx);
    }
    return 0;
  }

 private:
  /// Prompts until the user types a message; false when the chat should end (/exit,
  /// end of input, Ctrl-C twice at the prompt). Handles /clear.
  bool next_message(std::string& line) {
    for (int interrupts = 0;;) {
      if (tty_) std::fputs("> ", stderr);
      const Input in = input_.next(line, seen_);
      if (in == Input::Interrupted) {
        seen_ = g_interrupts.load();
        if (++interrupts >= 2) break;
        std::fputs("\n(Ctrl-C again, /exit or Ctrl-D quits)\n", stderr);
        continue;
      }
      interrupts = 0;
      if (in == Input::End) break;
      if (line == "/exit") return false;
      if (line == "/clear") {
        session_.reset();
        std::fputs("(new conversation)\n", stderr);
      } else if (!line.empty()) {
        return true;
      }
    }
    if (tty_) std::fputs("\n", stderr);  // leave the line of the last "> "
    return false;
  }

  Chat& chat_;
  ChatSession session_;
  SamplerChain sampler_;
  int n_predict_;
  bool tty_;
  LineReader input_;
  int seen_ = 0;  // Ctrl-C count already acted upon
};

int run_chat(const ChatOptions& o) {
  Result<Chat> chat = open_chat(o);
  if (!chat) return fail(chat.status().message());
  Result<SamplerChain> sampler = SamplerChain::create(sampling(o), int32_t(chat->ctx->n_vocab()));
  if (!sampler) return fail(sampler.status().message());
  return ChatLoop(*chat, o, std::move(*sampler)).run();
}

}  // namespace

Command add_chat(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat",
      "Chat with a model in the terminal. Each line on stdin is a user turn; the reply streams\n"
      "to stdout (prompts and notes go to stderr). Only each new turn is evaluated: the\n"
      "conversation stays in the context. A reply ends at an end-of-generation token, the\n"
      "template's end marker, -n tokens, Ctrl-C, or a full context (there is no context shift\n"
      "yet: /clear starts a new conversation). /exit, Ctrl-D or Ctrl-C twice at the prompt quit.\n"
      "The chat template comes from the model's tokenizer.chat_template (recognised families;\n"
      "chatml when absent or unknown, with a warning).");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  add_placement_options(cmd, o->placement);
  cmd->add_option("--system", o->system, "system message that opens the conversation");
  cmd->add_option("-n,--n-predict", o->n_predict,
                  "most tokens per reply (-1: until the end of the turn)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 24));
  cmd->add_option("--temp", o->temperature, "temperature; 0 = greedy")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--seed", o->seed, "random seed for sampling")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(CLI::Range(1, 512));
  cmd->add_option("-c,--ctx-size", o->ctx, "context size in tokens (0: the model's, at most 4096)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));
  std::string names;
  for (const std::string& n : ChatTemplate::names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--chat-template", o->chat_template,
                  "template family instead of the model's: " + names);
  return {cmd, [o] { return run_chat(*o); }};
}

}  // namespace tessera::cli
