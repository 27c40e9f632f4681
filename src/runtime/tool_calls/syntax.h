// Each format's syntax as the reply parser (stream.cpp) needs it: the texts that may open
// a block (a call, a list of calls, or a marker such as Command R7B's
// <|START_RESPONSE|>), the function that reads a block, and the thinking tags.
//
// A block parser gets the text from an opener on, as far as it has been generated, and
// says: the block is complete (its length, its calls), the text may still become one
// (NeedMore; never when `final`), or it is not a block (its opener is then content).
// Its verdict on a text must not change when more text follows, except NeedMore: that is
// what makes a stream and a whole parse agree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/tool_calls/json_text.h"
#include "tessera/tool_calls.h"

namespace tessera::tool_calls {

struct ParsedCall {
  std::string name;
  std::string arguments;  // compact JSON
};

struct Block {
  enum Kind { NeedMore, NotABlock, Complete } kind = NotABlock;
  size_t length = 0;  // Complete: bytes of the block
  std::vector<ParsedCall> calls;
  std::string content;  // Generic's {"response": ..}
};

using BlockParser = Block (*)(std::string_view text, bool final);

struct Syntax {
  std::vector<std::string_view> openers;        // open a block anywhere in content
  std::vector<std::string_view> start_openers;  // ... only where nothing but whitespace
                                                // and blocks came before ("": whatever
                                                // comes first)
  BlockParser parse = nullptr;                  // null: no blocks
  std::string_view think_open = "<think>";
  std::string_view think_close = "</think>";
};

const Syntax& syntax_of(Format format);

// ---- helpers of the block parsers --------------------------------------------------

/// A position in a block's text and the outcome of reading on from it.
class Reader {
 public:
  enum Step { Ok, More, Fail };

  Reader(std::string_view text, bool final) : text_(text), final_(final) {}

  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == text_.size(); }
  bool final() const { return final_; }
  std::string_view rest() const { return text_.substr(pos_); }
  void skip(size_t n) { pos_ += n; }
  void space() { pos_ = json::skip_space(text_, pos_); }

  /// Reads `lit`. More when the text ends inside it (and is not final).
  Step literal(std::string_view lit);
  /// Reads `lit` when it is there; More when the text ends inside it; else Ok, unmoved.
  Step optional(std::string_view lit);
  /// Reads one JSON value after optional whitespace.
  Step value(std::string_view& out);
  /// Reads a run of [A-Za-z0-9_-] (possibly empty). More when the text ends in it.
  Step name(std::string& out);

  /// The Block for a step that is not Ok.
  Block stop(Step s) const {
    Block b;
    b.kind = s == More && !final_ ? Block::NeedMore : Block::NotABlock;
    return b;
  }
  Block complete(std::vector<ParsedCall> calls) const {
    Block b;
    b.kind = Block::Complete;
    b.length = pos_;
    b.calls = std::move(calls);
    return b;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  bool final_;
};

/// The arguments of a call from their JSON value: an object (compacted), or a string that
/// holds one (OpenAI's wire form). nullopt otherwise.
std::optional<std::string> arguments_of(std::string_view value);
/// A call from an object with a string member `name_key` and an arguments member (the
/// first of `args_keys` present). nullopt when it is not one.
std::optional<ParsedCall> call_of(std::string_view object, std::string_view name_key,
                                  std::initializer_list<std::string_view> args_keys);

// The block parsers (syntax_json.cpp, syntax_marked.cpp).
Block parse_generic(std::string_view text, bool final);
Block parse_hermes(std::string_view text, bool final);
Block parse_llama3(std::string_view text, bool final);
Block parse_mistral(std::string_view text, bool final);
Block parse_firefunction(std::string_view text, bool final);
Block parse_command_r7b(std::string_view text, bool final);
Block parse_deepseek(std::string_view text, bool final);
Block parse_functionary_v31(std::string_view text, bool final);
Block parse_functionary_v32(std::string_view text, bool final);

/// The texts that open DeepSeek's list of calls: the real one and the variants R1's
/// distills write (as llama.cpp accepts them).
inline constexpr std::string_view kDeepSeekOpeners[] = {
    "<｜tool▁calls▁begin｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>"};

}  // namespace tessera::tool_calls
