// `tessera chat`: an interactive conversation in the terminal. Lines typed on stdin are
// user turns, or commands (/help); replies stream to stdout; prompts, notes and errors go
// to stderr, so stdout holds only the replies when it is piped.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "chat_cli.h"
#include "chat_file.h"
#include "chat_input.h"
#include "commands.h"
#include "tessera/chat.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

/// "the chatml template", or "its Jinja template (like chatml)" for the model's own.
std::string template_words(const ChatTemplate& t) {
  if (!t.is_jinja()) return "the " + std::string(t.name()) + " template";
  if (t.name() == "jinja") return "its Jinja template";
  return "its Jinja template (like " + std::string(t.name()) + ")";
}

// A model that never writes its template's end of turn gets replies of a quarter of the
// context, at most this many tokens, unless -n says otherwise.
constexpr int kDefaultReplyTokens = 128;

void show(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

void note(const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); }

enum class ReplyEnd { Done, Limit, Interrupted, ContextFull };

/// Samples, streams and closes one reply. Errors are library errors (fatal).
Result<ReplyEnd> reply(ChatSession& session, SamplerChain& sampler, int n_predict,
                       int& seen_interrupts) {
  ReplyEnd end = ReplyEnd::Limit;
  for (int n = 0; n_predict < 0 || n < n_predict; ++n) {
    if (const int now = sigint_count(); now != seen_interrupts) {
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
  if (end == ReplyEnd::Interrupted) note("[reply stopped]");
  if (end == ReplyEnd::ContextFull) {
    note("tessera: the context is full (" + std::to_string(ctx.n_ctx()) +
         " tokens), so the reply stops here; the next turn drops the oldest turns to make "
         "room (-c sets a larger context)");
  }
}

void report_dropped(const ChatSession& session) {
  if (const int n = session.dropped_turns(); n > 0) {
    note(n == 1
             ? "(the context was full: the oldest turn was dropped)"
             : "(the context was full: the " + std::to_string(n) + " oldest turns were dropped)");
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
  Result<ChatTemplate> tmpl = choose_chat_template(*c.model, o.chat_template, o.chat_template_file);
  if (!tmpl) return tmpl.status();
  c.chat_template = *tmpl;
  ContextParams cp;
  cp.n_ctx = o.ctx;
  cp.n_threads = o.threads;
  TESSERA_RETURN_IF_ERROR(apply_cache_types(o.cache_types, cp.type_k, cp.type_v));
  cp.rope = o.rope;
  Result<std::unique_ptr<Context>> ctx = Context::create(*c.model, cp);
  if (!ctx) return ctx.status();
  c.ctx = std::move(*ctx);
  const int64_t n_train = c.model->info().n_ctx_train;
  if (n_train > 0 && c.ctx->n_ctx() > n_train && !o.rope.overrides()) {
    std::fprintf(
        stderr,
        "tessera: warning: a context of %lld tokens is beyond the %lld the model was trained on\n",
        static_cast<long long>(c.ctx->n_ctx()), static_cast<long long>(n_train));
  }
  return c;
}

/// The longest reply: -n, or for a model that never ends its replies a quarter of the
/// context (at most kDefaultReplyTokens), said in a note.
int reply_limit(const ChatOptions& o, const Chat& chat, bool ends_turns) {
  if (ends_turns) return o.n_predict;
  const int n = o.n_predict_given
                    ? o.n_predict
                    : int(std::clamp<int64_t>(chat.ctx->n_ctx() / 4, 1, kDefaultReplyTokens));
  const std::string marker(chat.chat_template.end_marker());
  note("tessera chat: this model has no token for the end of a turn of " + template_words(chat.chat_template) +
       " (" + marker +
       "), so a reply stops at a blank line or " +
       (n < 0 ? std::string("when the context is full")
              : "after " + std::to_string(n) + " tokens (-n changes it)"));
  return n;
}

constexpr const char* kHelp =
    "Commands:\n"
    "  /help          this list\n"
    "  /clear         forget the conversation (the system prompt stays)\n"
    "  /save FILE     write the conversation to FILE as JSON: {\"messages\": [{\"role\": ..., "
    "\"content\": ...}, ...]}\n"
    "  /load FILE     replace the conversation by the one in FILE and evaluate it\n"
    "  /bye, /exit    quit (so do Ctrl-D and Ctrl-C twice)\n"
    "A line that starts with // is sent with one / less (//help sends \"/help\").\n"
    "Up and Down recall earlier lines; Ctrl-C stops a reply.";

/// The terminal side of a chat: prompts, commands, Ctrl-C, and one reply per turn.
class ChatLoop {
 public:
  ChatLoop(Chat& chat, const ChatOptions& o, SamplerChain sampler)
      : chat_(chat),
        session_(*chat.ctx, *chat.model->tokenizer(), chat.chat_template, o.system),
        sampler_(std::move(sampler)),
        tty_(isatty(STDIN_FILENO) != 0),
        input_(open_line_input(tty_)) {
    const bool ends_turns = can_end_turn(chat.chat_template, *chat.model->tokenizer());
    n_predict_ = reply_limit(o, chat, ends_turns);
    session_.set_stop_at_blank_line(!ends_turns);
    const int64_t n_ctx = chat.ctx->n_ctx();
    session_.set_reply_room(n_predict_ > 0 ? n_predict_ : n_ctx / 4);
  }

  int run() {
    install_sigint_counter();
    seen_ = sigint_count();
    if (tty_) {
      note("tessera chat: template " + std::string(chat_.chat_template.name()) + ", context " +
           std::to_string(chat_.ctx->n_ctx()) +
           " tokens. /help lists the commands; Up and Down recall lines; Ctrl-C stops a "
           "reply; /bye or Ctrl-D quits.");
    }
    std::string line;
    while (next_message(line)) {
      if (Status s = session_.add_user_message(line); !s) {
        // The model's template may refuse the conversation (raise_exception): a system
        // message it does not take, say. Else the turn did not fit.
        const bool refused = s.message().rfind("chat template", 0) == 0;
        note("tessera: " + s.message() +
             (refused ? " (the model's template refuses this conversation: try without --system, or choose "
                        "another template with --chat-template NAME)"
                      : "; send a shorter message (or restart with a larger -c)"));
        continue;
      }
      report_dropped(session_);
      Result<ReplyEnd> end = reply(session_, sampler_, n_predict_, seen_);
      if (!end) return fail(end.status().message());
      report_reply_end(*end, *chat_.ctx);
    }
    return 0;
  }

 private:
  enum class Command { Handled, Quit };

  /// Prompts until the user types a message; false when the chat should end (/bye,
  /// /exit, end of input, Ctrl-C twice at the prompt). Runs the commands.
  bool next_message(std::string& line) {
    for (int interrupts = 0;;) {
      const Input in = input_->next(line, seen_);
      if (in == Input::Interrupted) {
        seen_ = sigint_count();
        if (++interrupts >= 2) break;
        note("\n(Ctrl-C again, /bye or Ctrl-D quits)");
        continue;
      }
      interrupts = 0;
      if (in == Input::End) break;
      if (line.empty()) continue;
      input_->remember(line);
      if (line.rfind("//", 0) == 0) {  // a message that starts with "/"
        line.erase(0, 1);
        return true;
      }
      if (line[0] != '/') return true;
      if (command(line) == Command::Quit) return false;
    }
    if (tty_) std::fputs("\n", stderr);  // leave the line of the last "> "
    return false;
  }

  Command command(const std::string& line) {
    const size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
    arg.erase(0, arg.find_first_not_of(" \t"));
    arg.erase(arg.find_last_not_of(" \t") + 1);
    const bool takes_file = name == "/save" || name == "/load";
    const bool known =
        takes_file || name == "/help" || name == "/clear" || name == "/bye" || name == "/exit";
    if (!known) {
      note("tessera: unknown command '" + name +
           "' (/help lists the commands; start the line with // to send it as text)");
    } else if (takes_file && arg.empty()) {
      note("tessera: " + name + " needs a file name: " + name + " FILE");
    } else if (!takes_file && !arg.empty()) {
      note("tessera: " + name + " takes no argument (/help lists the commands)");
    } else if (name == "/bye" || name == "/exit") {
      return Command::Quit;
    } else if (name == "/help") {
      note(kHelp);
    } else if (name == "/clear") {
      session_.reset();
      note("(new conversation)");
    } else if (name == "/save") {
      save(arg);
    } else {
      load(arg);
    }
    return Command::Handled;
  }

  void save(const std::string& path) {
    std::vector<ChatMessage> messages = session_.messages();
    if (messages.empty() && !session_.system_prompt().empty()) {
      messages.push_back({"system", session_.system_prompt()});  // not decoded yet
    }
    if (Status s = save_conversation(path, messages); !s) {
      note("tessera: " + s.message());
      return;
    }
    note("(" + std::to_string(messages.size()) + " messages saved to " + path + ")");
  }

  void load(const std::string& path) {
    Result<std::vector<ChatMessage>> messages = load_conversation(path);
    Status s = messages ? session_.replace(*messages) : messages.status();
    if (!s) {
      const bool named = s.message().rfind(path, 0) == 0;
      note("tessera: " + (named ? "" : path + ": ") + s.message() +
           "; the conversation is unchanged");
      return;
    }
    report_dropped(session_);
    note("(" + std::to_string(messages->size()) + " messages loaded from " + path + ")");
  }

  Chat& chat_;
  ChatSession session_;
  SamplerChain sampler_;
  int n_predict_ = -1;
  bool tty_;
  std::unique_ptr<LineInput> input_;
  int seen_ = 0;  // Ctrl-C count already acted upon
};

}  // namespace

int run_chat(const ChatOptions& o) {
  Result<Chat> chat = open_chat(o);
  if (!chat) return fail(chat.status().message());
  Result<SamplerChain> sampler = SamplerChain::create(o.sampling, int32_t(chat->ctx->n_vocab()));
  if (!sampler) return fail(sampler.status().message());
  return ChatLoop(*chat, o, std::move(*sampler)).run();
}

Command add_chat(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat",
      "Chat with a model in the terminal. Each line on stdin is a user turn; the reply streams\n"
      "to stdout (prompts and notes go to stderr). On a terminal the line can be edited (arrow\n"
      "and emacs keys, ~/.editrc) and Up/Down recall earlier lines. Only each new turn is\n"
      "evaluated: the conversation stays in the context; when a turn does not fit, the oldest\n"
      "turns are dropped. A reply ends at an end-of-generation token, the template's end\n"
      "marker, -n tokens, Ctrl-C, or a full context. A model that has no token for its\n"
      "template's end of turn (the built-in one) stops at a blank line, after a quarter of the\n"
      "context (at most 128 tokens) unless -n is given.\n"
      "Commands: /help, /clear (forget the conversation, keep the system prompt), /save FILE\n"
      "and /load FILE (the conversation as JSON: {\"messages\": [{\"role\", \"content\"}, ...]}),\n"
      "/bye or /exit (quit; so do Ctrl-D and Ctrl-C twice at the prompt). Other /words are\n"
      "refused; a line that starts with // is sent with one / less.\n"
      "The chat template is the model's own (tokenizer.chat_template, rendered as Jinja), or\n"
      "--chat-template-file's, or the built-in family --chat-template names; chatml when the\n"
      "file has none, with a warning.");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  add_placement_options(cmd, o->placement);
  add_cache_type_options(cmd, o->cache_types);
  add_rope_options(cmd, o->rope);
  cmd->add_option("--system", o->system, "system message that opens the conversation");
  CLI::Option* n_predict =
      cmd->add_option("-n,--n-predict", o->n_predict,
                      "most tokens per reply (-1: until the end of the turn; default -1, or "
                      "for a model that cannot end a turn a quarter of the context, at most 128)")
          ->check(NumberRange(-1, 1 << 24));
  o->sampling.temperature = 0.8f;
  cmd->add_option("--temp", o->sampling.temperature, "temperature; 0 = greedy")
      ->capture_default_str()
      ->check(NumberRange(0.0, 100.0));
  auto seed = std::make_shared<int64_t>(-1);
  add_seed_option(cmd, *seed);
  cmd->add_flag("-i,--interactive,--conversation", o->conversation,
                "accepted (llama-cli's -i / -cnv): a chat is a conversation already");
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(NumberRange(1, 512));
  cmd->add_option("-c,--ctx-size", o->ctx, "context size in tokens (0: the model's, at most 4096)")
      ->capture_default_str()
      ->check(NumberRange(int64_t(0), int64_t(1) << 24));
  std::string names;
  for (const std::string& n : ChatTemplate::names()) names += (names.empty() ? "" : ", ") + n;
  auto* family = cmd->add_option("--chat-template", o->chat_template,
                                 "built-in template family instead of the model's own: " + names);
  cmd->add_option("--chat-template-file", o->chat_template_file,
                  "Jinja chat template (as in tokenizer_config.json) instead of the model's own")
      ->check(CLI::ExistingFile)
      ->excludes(family);
  return {cmd, [o, n_predict, seed] {
            o->n_predict_given = n_predict->count() > 0;
            o->sampling.seed = resolve_seed(*seed);
            report_seed(*seed, o->sampling.seed, o->sampling.temperature > 0);
            return run_chat(*o);
          }};
}

}  // namespace tessera::cli
