// Always-on invariant checks: a failed CHECK is a bug in tessera, not bad input.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace tessera::detail {
[[noreturn]] inline void check_failed(const char* file, int line, const char* expr, const char* msg) {
  std::fprintf(stderr, "tessera: internal error at %s:%d: CHECK(%s) failed%s%s\n", file, line, expr,
               msg[0] ? ": " : "", msg);
  std::abort();
}
}  // namespace tessera::detail

#define TESSERA_CHECK(cond)                                                   \
  do {                                                                        \
    if (!(cond)) ::tessera::detail::check_failed(__FILE__, __LINE__, #cond, ""); \
  } while (0)

#define TESSERA_CHECK_MSG(cond, msg)                                           \
  do {                                                                         \
    if (!(cond)) ::tessera::detail::check_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
