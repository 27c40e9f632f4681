// Line input for `tessera chat`: libedit on a terminal, read(2) on a pipe. Both wait for
// input with ppoll so that a Ctrl-C (counted by the SIGINT handler) ends the wait.
#include "chat_input.h"

#include <histedit.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cwchar>

namespace tessera::cli {
namespace {

std::atomic<int> g_interrupts{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigint(int) { g_interrupts.fetch_add(1, std::memory_order_relaxed); }

// SIGCONT: the chat was stopped (Ctrl-Z) and continued (fg) while it waited for a line;
// the shell has meanwhile put the terminal back in its own mode.
std::atomic<int> g_continues{0};
extern "C" void on_sigcont(int) { g_continues.fetch_add(1, std::memory_order_relaxed); }

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

/// Lines from a pipe or file, read with read(2) so that Ctrl-C can interrupt the wait.
class PlainInput : public LineInput {
 public:
  Input next(std::string& line, int seen) override {
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
  void remember(const std::string&) override {}

 private:
  std::string buf_;
  bool eof_ = false;
};

/// A terminal: libedit edits the line (arrows, emacs keys) and keeps the history. It reads
/// characters through read_char below, which gives way to Ctrl-C.
class EditedInput : public LineInput {
 public:
  EditedInput() {
    // libedit decodes the keys it reads with the locale's character set: UTF-8 input
    // needs a UTF-8 LC_CTYPE, which a bare "C" environment does not give.
    std::setlocale(LC_CTYPE, "");
    if (MB_CUR_MAX == 1) std::setlocale(LC_CTYPE, "C.UTF-8");
    HistEvent ev;
    history_ = history_init();
    history(history_, &ev, H_SETSIZE, 1000);
    history(history_, &ev, H_SETUNIQUE, 1);  // a line repeated at once is kept once
    // The prompt and the line being edited go to stderr, like the chat's notes, unless
    // only stdout is the terminal (`tessera chat 2>log`): libedit edits only on a terminal.
    FILE* screen = isatty(STDERR_FILENO) == 0 && isatty(STDOUT_FILENO) != 0 ? stdout : stderr;
    editor_ = el_init("tessera", stdin, screen, stderr);
    el_set(editor_, EL_EDITOR, "emacs");
    el_set(editor_, EL_PROMPT, &EditedInput::prompt);
    el_set(editor_, EL_HIST, history, history_);
    el_set(editor_, EL_CLIENTDATA, static_cast<void*>(this));
    el_set(editor_, EL_GETCFN, &EditedInput::read_char);
    el_source(editor_, nullptr);  // the user's ~/.editrc, as other libedit programs read it
    struct sigaction sa = {};
    sa.sa_handler = on_sigcont;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCONT, &sa, nullptr);
  }
  ~EditedInput() override {
    el_end(editor_);
    history_end(history_);
  }
  EditedInput(const EditedInput&) = delete;
  EditedInput& operator=(const EditedInput&) = delete;

  Input next(std::string& line, int seen) override {
    seen_ = seen;
    interrupted_ = false;
    int n = 0;
    const char* text = el_gets(editor_, &n);
    if (interrupted_) return Input::Interrupted;
    if (text == nullptr || n <= 0) return Input::End;  // Ctrl-D on an empty line
    line.assign(text, size_t(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    return Input::Line;
  }

  void remember(const std::string& line) override {
    HistEvent ev;
    history(history_, &ev, H_ENTER, line.c_str());
  }

 private:
  static const char* prompt(EditLine*) { return "> "; }

  /// One character for libedit: 1 with it in *out, 0 at the end of input, -1 (errno
  /// EINTR) when a Ctrl-C came, which makes el_gets return at once.
  static int read_char(EditLine* editor, wchar_t* out) {
    void* data = nullptr;
    el_get(editor, EL_CLIENTDATA, &data);
    EditedInput& self = *static_cast<EditedInput*>(data);
    for (;;) {
      char byte = 0;
      const ssize_t n = wait_for_input(self.seen_) ? ::read(STDIN_FILENO, &byte, 1) : -1;
      if (const int c = g_continues.load(); c != self.continues_) {
        // Back from Ctrl-Z: the terminal in libedit's mode again, and the line redrawn.
        self.continues_ = c;
        el_set(editor, EL_PREP_TERM, 0);
        el_set(editor, EL_PREP_TERM, 1);
        el_set(editor, EL_REFRESH);
      }
      if (n < 0 && (errno == EINTR || g_interrupts.load() != self.seen_)) {
        if (g_interrupts.load() == self.seen_) continue;  // another signal
        self.interrupted_ = true;
        errno = EINTR;
        return -1;
      }
      if (n <= 0) return int(n);
      const size_t got = std::mbrtowc(out, &byte, 1, &self.shift_);
      if (got == size_t(-2)) continue;  // more bytes of this character follow
      if (got == size_t(-1)) {          // not a character here: skip the byte
        self.shift_ = std::mbstate_t{};
        continue;
      }
      return 1;
    }
  }

  EditLine* editor_ = nullptr;
  History* history_ = nullptr;
  std::mbstate_t shift_{};
  int seen_ = 0;
  int continues_ = 0;
  bool interrupted_ = false;
};

}  // namespace

void install_sigint_counter() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: Ctrl-C interrupts a read() waiting at the prompt
  sigaction(SIGINT, &sa, nullptr);
}

int sigint_count() { return g_interrupts.load(); }

std::unique_ptr<LineInput> open_line_input(bool terminal) {
  if (terminal) return std::make_unique<EditedInput>();
  return std::make_unique<PlainInput>();
}

}  // namespace tessera::cli
