// A model's own Jinja chat template through ChatTemplate (tessera/chat.h): the end marker
// and assistant suffix it derives, no double BOS, a template's error as an error, the
// delta of a new turn, and OpenAI's string arguments given to the templates that only
// render objects (detected from the template, as llama.cpp's minja detects it), checked on
// the real templates of ../shared/templates against jinja2's renders.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/test_util.h"
#include "tessera/chat.h"

namespace tessera {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* const kChatml =
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

TEST(ChatTemplateJinja, RendersTheTemplateAndKnowsItsEndMarker) {
  Result<ChatTemplate> t = ChatTemplate::from_jinja(kChatml);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_TRUE(t->is_jinja());
  EXPECT_EQ(t->name(), "chatml");
  EXPECT_EQ(t->end_marker(), "<|im_end|>");
  const std::vector<ChatMessage> m = {{"user", "Hi"}};
  EXPECT_EQ(*t->format(m, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const std::vector<ChatMessage> more = {{"assistant", "Yo"}, {"user", "Again"}};
  EXPECT_EQ(*t->format_delta(m, more, true),
            "<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateJinja, TemplatesOfNoFamilyGetTheirSuffixFromAProbe) {
  Result<ChatTemplate> t = ChatTemplate::from_jinja(
      "{% for m in messages %}<<{{ m.role }}>>{{ m.content }}[[END]]\n{% endfor %}"
      "{% if add_generation_prompt %}<<assistant>>{% endif %}");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->name(), "jinja");
  EXPECT_EQ(t->end_marker(), "[[END]]");
  EXPECT_EQ(t->assistant_suffix(), "[[END]]\n");
}

TEST(ChatTemplateJinja, ErrorsAreErrors) {
  EXPECT_FALSE(ChatTemplate::from_jinja("{% if %}").is_ok());
  Result<ChatTemplate> t = ChatTemplate::from_jinja(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  ASSERT_TRUE(t.is_ok());
  const std::vector<ChatMessage> sys = {{"system", "S"}, {"user", "U"}};
  Result<std::string> out = t->format(sys, true);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("System role not supported"), std::string::npos) << out.status().message();
}

TEST(ChatTemplateJinja, ToolsAndVariablesReachTheTemplate) {
  Result<ChatTemplate> t = ChatTemplate::from_jinja(
      "{% if tools %}{% for t in tools %}{{ t.function.name }};{% endfor %}{% endif %}"
      "{{ 'think' if enable_thinking else 'plain' }}|{% for m in messages %}{% if m.tool_calls %}"
      "{{ m.tool_calls[0].function.arguments|tojson }}{% endif %}{% endfor %}");
  ASSERT_TRUE(t.is_ok());
  ChatExtras extras;
  extras.tools_json = R"([{"type": "function", "function": {"name": "get_weather"}}])";
  extras.kwargs_json = R"({"enable_thinking": true})";
  std::vector<ChatMessage> m = {{"assistant", "",
                                 R"({"role": "assistant", "tool_calls": [{"function": {"name": "get_weather",
                                     "arguments": "{\"city\": \"Paris\"}"}}]})"}};
  // This template writes the arguments as JSON: OpenAI's string form is parsed for it
  // (else it would write the string quoted again).
  EXPECT_EQ(*t->format(m, false, extras), "get_weather;think|{\"city\": \"Paris\"}");
}

// The templates of ../shared/templates given OpenAI's string arguments (the `_strargs`
// cases): each renders as jinja2 renders the form it can use. A template that renders
// objects gets objects (not a JSON text quoted again); one that only takes strings (it
// adds them to text: Functionary) keeps strings.
TEST(ChatTemplateJinja, StringArgumentsBecomeObjectsWhereTheTemplateWantsThem) {
  TESSERA_REQUIRE_SHARED(path, "templates/cases.json");
  const std::string folder = path.substr(0, path.rfind('/') + 1);
  const nlohmann::ordered_json all = nlohmann::ordered_json::parse(read_text(path));
  std::map<std::string, const nlohmann::ordered_json*> cases;
  for (const auto& c : all["cases"]) cases[c["template"].get<std::string>() + "/" + c["case"].get<std::string>()] = &c;
  int checked = 0;
  for (const auto& [key, c] : cases) {
    if (!key.ends_with("/tool_roundtrip_strargs") && !key.ends_with("/parallel_calls_strargs")) continue;
    const std::string name = (*c)["template"].get<std::string>();
    const nlohmann::ordered_json& object_case = *cases.at(key.substr(0, key.size() - 8));
    const bool object_ok = object_case.contains("expected"), string_ok = c->contains("expected");
    if (!object_ok && !string_ok) continue;  // the template refuses the conversation either way
    Result<ChatTemplate> t = ChatTemplate::from_jinja(read_text(folder + name + ".jinja"));
    ASSERT_TRUE(t.is_ok()) << name;
    const nlohmann::ordered_json& ctx = (*c)["context"];
    std::vector<ChatMessage> messages;
    for (const auto& m : ctx["messages"]) messages.push_back({m["role"].get<std::string>(), "", m.dump()});
    ChatExtras extras;
    extras.now = all["now"].get<std::string>();
    if (ctx.contains("tools")) extras.tools_json = ctx["tools"].dump();
    extras.kwargs_json = nlohmann::ordered_json{{"bos_token", ctx["bos_token"]}, {"eos_token", ctx["eos_token"]}}.dump();
    Result<std::string> out = t->format(messages, ctx["add_generation_prompt"].get<bool>(), extras);
    ASSERT_TRUE(out.is_ok()) << key << ": " << out.status().message();
    if (object_ok && !string_ok) {
      EXPECT_EQ(*out, object_case["expected"].get<std::string>()) << key << ": objects were needed";
    } else if (string_ok && !object_ok) {
      EXPECT_EQ(*out, (*c)["expected"].get<std::string>()) << key << ": strings were needed";
    } else {
      const std::string& as_object = object_case["expected"].get_ref<const std::string&>();
      const std::string& as_string = (*c)["expected"].get_ref<const std::string&>();
      // Where the string form shows the arguments quoted again, the object form is right.
      const bool quoted_again = as_string.find("\\\"location\\\"") != std::string::npos &&
                                as_object.find("\\\"location\\\"") == std::string::npos;
      if (quoted_again) {
        EXPECT_EQ(*out, as_object) << key;
      } else {
        EXPECT_TRUE(*out == as_object || *out == as_string) << key;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace tessera
