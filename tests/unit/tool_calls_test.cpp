// Tool-call formats: which format each real chat template asks for, the tools and
// tool_choice of a request, the replies of every format split into content, reasoning and
// calls (on the call texts the templates themselves render, from ../shared/templates/
// cases.json, and on hand-written ones: parallel calls, content before a call, malformed
// calls, thinking), and streaming against the whole parse on random cuts.
#include "tessera/tool_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "common/test_util.h"
#include "runtime/tool_calls/json_text.h"

namespace tessera::tool_calls {
namespace {

using Json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Expected {
  std::string name;
  std::string arguments;
};

/// The calls of `reply` as (name, arguments).
std::vector<Expected> calls_of(const Reply& reply) {
  std::vector<Expected> out;
  for (const ToolCall& c : reply.calls) out.push_back({c.name, c.arguments});
  return out;
}

bool operator==(const Expected& a, const Expected& b) {
  return a.name == b.name && a.arguments == b.arguments;
}

void PrintTo(const Expected& e, std::ostream* os) { *os << e.name << "(" << e.arguments << ")"; }

const std::vector<Expected> kWeather = {{"get_weather", R"({"location":"Paris"})"}};
const std::vector<Expected> kTwo = {{"get_weather", R"({"location":"Tokyo","unit":"celsius"})"},
                                    {"get_time", R"({"tz":"Asia/Tokyo"})"}};

// ---- detection ---------------------------------------------------------------------------

TEST(ToolCallsDetect, EveryTemplateOfTheReferenceData) {
  const std::string folder = test::shared_folder("templates");
  if (folder.empty()) GTEST_SKIP() << "shared/templates absent";
  const std::map<std::string, Format> expected = {
      {"CohereForAI-c4ai-command-r-plus-tool_use", Format::Generic},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", Format::CommandR7B},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", Format::Hermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", Format::Hermes},
      {"Qwen-Qwen2.5-7B-Instruct", Format::Hermes},
      {"Qwen-Qwen3", Format::Hermes},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", Format::DeepSeekR1},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", Format::DeepSeekR1},
      {"deepseek-ai-DeepSeek-V3", Format::DeepSeekV3},
      {"fireworks-ai-llama-3-firefunction-v2", Format::Firefunction},
      {"google-gemma-2-2b-it", Format::Generic},
      {"google-gemma-3", Format::Generic},
      {"meetkai-functionary-medium-v3.1", Format::FunctionaryV31},
      {"meetkai-functionary-medium-v3.2", Format::FunctionaryV32},
      {"meta-llama-Llama-3.1-8B-Instruct", Format::Llama3Json},
      {"meta-llama-Llama-3.1-tokenizer-default", Format::Generic},
      {"meta-llama-Llama-3.2-3B-Instruct", Format::Llama3Json},
      {"meta-llama-Llama-3.3-70B-Instruct", Format::Llama3Json},
      {"microsoft-Phi-3.5-mini-instruct", Format::Generic},
      {"mistralai-Mistral-Nemo-Instruct-2407", Format::Mistral},
  };
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string name = entry.path().stem().string();
    const auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << "a template without an expected format: " << name;
    const Format got = detect_format(read_file(entry.path().string()));
    EXPECT_EQ(format_name(got), format_name(it->second)) << name;
    ++seen;
  }
  EXPECT_EQ(seen, expected.size());
}

TEST(ToolCallsDetect, NamesAndPromptsThatOpenReasoning) {
  EXPECT_EQ(format_name(Format::Hermes), "Hermes 2 Pro");
  EXPECT_EQ(format_name(Format::ContentOnly), "Content-only");
  EXPECT_EQ(detect_format("{{ messages }}"), Format::Generic);
  EXPECT_FALSE(system_instruction(Format::Generic).empty());
  EXPECT_TRUE(system_instruction(Format::Hermes).empty());
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>\n"));
  EXPECT_TRUE(prompt_opens_reasoning("<|CHATBOT_TOKEN|><|START_THINKING|>"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
}

// ---- JSON in unfinished text ---------------------------------------------------------------

TEST(ToolCallsJson, CompletePartialInvalid) {
  const std::string doc = R"({"a": [1, -2.5e3, true, null, "x\u00e9\"y"], "b": {}, "c": 0})";
  const json::ScanResult whole = json::scan(doc + " tail", 0, false);
  EXPECT_EQ(whole.kind, json::Scan::Complete);
  EXPECT_EQ(whole.end, doc.size());
  // Every proper prefix may still become the document; at the end of the text it is not one.
  for (size_t n = 0; n < doc.size(); ++n) {
    EXPECT_EQ(json::scan(doc.substr(0, n), 0, false).kind, json::Scan::Partial) << n;
    EXPECT_EQ(json::scan(doc.substr(0, n), 0, true).kind, json::Scan::Invalid) << n;
  }
  // A number at the end of the text may go on, unless the text is final.
  EXPECT_EQ(json::scan("12", 0, false).kind, json::Scan::Partial);
  EXPECT_EQ(json::scan("12", 0, true).kind, json::Scan::Complete);
  for (const char* bad : {"{a: 1}", "[1,]", "[01]", "\"\x01\"", "tru e", "{\"a\" 1}", "[1 2]",
                          "\"\\q\"", "-", "1.e5", "}"}) {
    EXPECT_EQ(json::scan(bad, 0, true).kind, json::Scan::Invalid) << bad;
  }
  EXPECT_EQ(json::scan(std::string(300, '['), 0, false).kind, json::Scan::Invalid);  // too deep
  EXPECT_EQ(json::compact("{ \"a b\" : [ 1 ,\n 2 ] , \"c\": \" \\\" \" }"),
            "{\"a b\":[1,2],\"c\":\" \\\" \"}");
  EXPECT_EQ(json::string_value(R"("\ud83d\ude00 \u00e9\n")"), "\xF0\x9F\x98\x80 \xC3\xA9\n");
  EXPECT_EQ(json::quote("a\"b\n\x01"), "\"a\\\"b\\n\\u0001\"");
}

// ---- tools and tool_choice ----------------------------------------------------------------

constexpr std::string_view kToolsJson = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"location": {"type": "string"},
   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}},
  {"type": "function", "function": {"name": "get_time",
   "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}
])";

std::vector<Tool> weather_tools() {
  Result<std::vector<Tool>> t = parse_tools(kToolsJson);
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return t ? *t : std::vector<Tool>{};
}

TEST(ToolCallsTools, ParsesOpenAITools) {
  const std::vector<Tool> tools = weather_tools();
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "get_weather");
  EXPECT_EQ(tools[0].description, "Weather in a city");
  // Compact, in the schema's own key order (which orders the arguments).
  EXPECT_EQ(
      tools[0].parameters,
      R"({"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]})");
  EXPECT_EQ(tools[1].description, "");
  Result<std::vector<Tool>> bare =
      parse_tools(R"([{"type":"function","function":{"name":"ping"}}])");
  ASSERT_TRUE(bare.is_ok());
  EXPECT_EQ((*bare)[0].parameters, R"({"type":"object"})");
  EXPECT_TRUE(parse_tools("null")->empty());
}

TEST(ToolCallsTools, ErrorsNameTheEntry) {
  const auto error = [](std::string_view json) {
    Result<std::vector<Tool>> t = parse_tools(json);
    return t.is_ok() ? std::string("(ok)") : t.status().message();
  };
  EXPECT_EQ(error("{}"), "tools: expected an array of tools, got {}");
  EXPECT_NE(error("[1,").find("tools: not JSON"), std::string::npos);
  EXPECT_EQ(
      error(R"([{"type":"function","function":{"name":"a"}}, {"type":"function","function":{}}])"),
      "tools[1]: 'function.name' is missing");
  EXPECT_EQ(error(R"([{"type":"retrieval"}])"),
            R"(tools[0]: type "retrieval" is not supported (only 'function'))");
  EXPECT_EQ(error(R"([{"function":{"name":"a"}}])"), "tools[0]: 'type' is missing");
  EXPECT_EQ(
      error(R"([{"type":"function","function":{"name":"get weather"}}])"),
      R"(tools[0]: the name "get weather" must be 1 to 64 letters, digits, underscores and dashes)");
  EXPECT_EQ(
      error(
          R"([{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])"),
      "tools[1]: the name 'f' repeats tools[0]");
  EXPECT_EQ(error(R"([{"type":"function","function":{"name":"f","parameters":[]}}])"),
            "tools[0] (f): 'parameters' must be a JSON schema object");
}

TEST(ToolCallsTools, Choices) {
  const std::vector<Tool> tools = weather_tools();
  EXPECT_EQ(parse_choice("", tools)->kind, Choice::Auto);
  EXPECT_EQ(parse_choice("null", tools)->kind, Choice::Auto);
  EXPECT_EQ(parse_choice("\"auto\"", tools)->kind, Choice::Auto);
  EXPECT_EQ(parse_choice("\"none\"", tools)->kind, Choice::None);
  EXPECT_EQ(parse_choice("\"required\"", tools)->kind, Choice::Required);
  Result<Choice> named =
      parse_choice(R"({"type":"function","function":{"name":"get_time"}})", tools);
  ASSERT_TRUE(named.is_ok());
  EXPECT_EQ(named->kind, Choice::Named);
  EXPECT_EQ(named->name, "get_time");
  const auto error = [&](std::string_view json, const std::vector<Tool>& t) {
    Result<Choice> c = parse_choice(json, t);
    return c.is_ok() ? std::string("(ok)") : c.status().message();
  };
  EXPECT_EQ(error(R"({"type":"function","function":{"name":"nope"}})", tools),
            "tool_choice: there is no tool named 'nope'");
  EXPECT_EQ(error("\"required\"", {}), "tool_choice: \"required\" needs tools");
  EXPECT_NE(error("\"always\"", tools).find("tool_choice: expected"), std::string::npos);
  EXPECT_NE(error(R"({"type":"function"})", tools).find("tool_choice: expected"),
            std::string::npos);
}

// ---- the call texts the templates render ----------------------------------------------------

/// The calls an assistant message of a cases.json context holds, as the parser gives them.
std::vector<Expected> context_calls(const Json& context) {
  std::vector<Expected> out;
  for (const Json& m : context.at("messages")) {
    if (!m.contains("tool_calls")) continue;
    for (const Json& c : m.at("tool_calls")) {
      const Json& args = c.at("function").at("arguments");
      out.push_back({c.at("function").at("name").get<std::string>(),
                     (args.is_string() ? Json::parse(args.get<std::string>()) : args).dump()});
    }
  }
  return out;
}

struct RenderedCase {
  const char* template_name;
  const char* case_name;
  const char* after;   // the rendered call text follows this...
  const char* before;  // ... and ends before this
  ParseOptions options;
};

TEST(ToolCallsParse, TheCallsTheTemplatesRender) {
  TESSERA_REQUIRE_SHARED(path, "templates/cases.json");
  const Json cases = Json::parse(read_file(path)).at("cases");
  const char* kHermesAfter = "<|im_start|>assistant\n";
  const char* kLlamaAfter = "<|start_header_id|>assistant<|end_header_id|>\n\n";
  const ParseOptions plain;
  const ParseOptions reasoning{.extract_reasoning = true};
  const std::vector<RenderedCase> rendered = {
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "parallel_calls", kHermesAfter,
       "<|im_end|>", plain},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "tool_roundtrip", kHermesAfter,
       "<|im_end|>", plain},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "parallel_calls_strargs", kHermesAfter,
       "<|im_end|>", plain},
      {"Qwen-Qwen2.5-7B-Instruct", "parallel_calls", kHermesAfter, "<|im_end|>", plain},
      {"Qwen-Qwen2.5-7B-Instruct", "parallel_calls_strargs", kHermesAfter, "<|im_end|>", plain},
      {"Qwen-Qwen3", "parallel_calls", kHermesAfter, "<|im_end|>", reasoning},
      {"Qwen-Qwen3", "tool_roundtrip_strargs", kHermesAfter, "<|im_end|>", reasoning},
      {"mistralai-Mistral-Nemo-Instruct-2407", "parallel_calls", "[/INST]", "</s>", plain},
      {"mistralai-Mistral-Nemo-Instruct-2407", "parallel_calls_strargs", "[/INST]", "</s>", plain},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", "parallel_calls",
       "?<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
       reasoning},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", "tool_roundtrip_strargs",
       "?<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
       reasoning},
      {"meetkai-functionary-medium-v3.1", "parallel_calls_strargs", kLlamaAfter, "<|eom_id|>",
       plain},
      {"meetkai-functionary-medium-v3.1", "tool_roundtrip_strargs", kLlamaAfter, "<|eom_id|>",
       plain},
      {"meetkai-functionary-medium-v3.2", "parallel_calls_strargs",
       "?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n>>>", "<|eot_id|>", plain},
      {"meta-llama-Llama-3.1-8B-Instruct", "tool_roundtrip", kLlamaAfter, "<|eot_id|>", plain},
      {"meta-llama-Llama-3.2-3B-Instruct", "tool_roundtrip_strargs", kLlamaAfter, "<|eot_id|>",
       plain},
      {"meta-llama-Llama-3.3-70B-Instruct", "tool_roundtrip", kLlamaAfter, "<|eot_id|>", plain},
  };
  for (const RenderedCase& rc : rendered) {
    SCOPED_TRACE(std::string(rc.template_name) + " / " + rc.case_name);
    const Json* found = nullptr;
    for (const Json& c : cases) {
      if (c.at("template") == rc.template_name && c.at("case") == rc.case_name) found = &c;
    }
    ASSERT_NE(found, nullptr);
    ASSERT_TRUE(found->contains("expected"));
    const std::string expected_text = found->at("expected").get<std::string>();
    // The assistant turn after the user's question.
    std::string question_text;
    for (const Json& m : found->at("context").at("messages")) {
      if (m.at("role") == "user") question_text = m.at("content").get<std::string>();
    }
    const size_t question = expected_text.find(question_text);
    ASSERT_NE(question, std::string::npos);
    const size_t begin = expected_text.find(rc.after, question);
    ASSERT_NE(begin, std::string::npos);
    const size_t start = begin + std::string_view(rc.after).size();
    const size_t end = expected_text.find(rc.before, start);
    ASSERT_NE(end, std::string::npos);
    const std::string text = expected_text.substr(start, end - start);
    const std::string tmpl =
        read_file(test::shared_file(std::string("templates/") + rc.template_name + ".jinja"));
    const Reply reply = parse_reply(detect_format(tmpl), text, rc.options);
    EXPECT_EQ(calls_of(reply), context_calls(found->at("context"))) << text;
    EXPECT_EQ(reply.content, "") << text;
    EXPECT_EQ(reply.reasoning, "") << text;
  }
}

// ---- hand-written replies of every format ----------------------------------------------------

struct Sample {
  Sample(const char* l, Format f, std::string t, std::string c, std::vector<Expected> k,
         std::string r = "", ParseOptions o = {})
      : label(l),
        format(f),
        text(std::move(t)),
        content(std::move(c)),
        calls(std::move(k)),
        reasoning(std::move(r)),
        options(o) {}
  const char* label;
  Format format;
  std::string text;
  std::string content;
  std::vector<Expected> calls;
  std::string reasoning;
  ParseOptions options;
};

const ParseOptions kReason{.extract_reasoning = true};
const ParseOptions kOpen{.extract_reasoning = true, .reasoning_open = true};

std::vector<Sample> samples() {
  const std::string ds_call1 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": \"Tokyo\", "
      "\"unit\": \"celsius\"}\n```<｜tool▁call▁end｜>";
  const std::string ds_call2 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"tz\": \"Asia/Tokyo\"}\n```"
      "<｜tool▁call▁end｜>";
  const std::string hermes1 =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
      "\"Paris\"}}\n</tool_call>";
  return {
      // Content only, and formats that find no call.
      {"plain",
       Format::ContentOnly,
       "Hello <tool_call>{}</tool_call> world\n",
       "Hello <tool_call>{}</tool_call> world\n",
       {}},
      {"content-only thinks", Format::ContentOnly, "<think>hm</think>Hi", "Hi", {}, "hm", kReason},
      {"hermes content",
       Format::Hermes,
       "The weather is fine. ✓ 😀",
       "The weather is fine. ✓ 😀",
       {}},
      // Hermes: one, parallel, content before, malformed, cut off, thinking.
      {"hermes one", Format::Hermes, hermes1, "", kWeather},
      {"hermes content first", Format::Hermes, "Let me check.\n" + hermes1 + "\n", "Let me check.",
       kWeather},
      {"hermes parallel", Format::Hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Tokyo\", "
       "\"unit\": \"celsius\"}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": "
       "\"Asia/Tokyo\"}}\n</tool_call>",
       "", kTwo},
      {"hermes no close at the end", Format::Hermes,
       "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n", "",
       kWeather},
      {"hermes malformed json",
       Format::Hermes,
       "Sure <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
       "}}\n</tool_call> ok",
       "Sure <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
       "}}\n</tool_call> ok",
       {}},
      {"hermes no name",
       Format::Hermes,
       "<tool_call>{\"arguments\": {}}</tool_call>",
       "<tool_call>{\"arguments\": {}}</tool_call>",
       {}},
      {"hermes wrong close",
       Format::Hermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_cal> and",
       "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_cal> and",
       {}},
      {"hermes cut off",
       Format::Hermes,
       "Checking <tool_call>\n{\"name\": \"get_weather\", \"argu",
       "Checking <tool_call>\n{\"name\": \"get_weather\", \"argu",
       {}},
      {"hermes marker prefix at the end", Format::Hermes, "a < b <tool", "a < b <tool", {}},
      {"hermes malformed then good", Format::Hermes, "<tool_call>oops</tool_call>\n" + hermes1,
       "<tool_call>oops</tool_call>", kWeather},
      {"qwen3 thinks", Format::Hermes, "<think>\nThe user wants weather.\n</think>\n\n" + hermes1,
       "", kWeather, "The user wants weather.", kReason},
      {"qwen3 thinks, kept",
       Format::Hermes,
       "<think>\nhm\n</think>\n\nHi",
       "<think>\nhm\n</think>\n\nHi",
       {},
       "",
       {}},
      {"qwen3 call inside thinking",
       Format::Hermes,
       "<think>maybe " + hermes1 + "</think>Done.",
       "Done.",
       {},
       "maybe " + hermes1,
       kReason},
      {"thinking never closed",
       Format::Hermes,
       "<think>\nstill thinking ",
       "",
       {},
       "still thinking",
       kReason},
      {"no thinking", Format::Hermes, "  <thinx>", "  <thinx>", {}, "", kReason},
      // Llama 3.x.
      {"llama json", Format::Llama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}", "", kWeather},
      {"llama typed", Format::Llama3Json,
       "\n{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"location\": "
       "\"Paris\"}}",
       "", kWeather},
      {"llama json not a call",
       Format::Llama3Json,
       "{\"name\": \"Bob\", \"age\": 3}",
       "{\"name\": \"Bob\", \"age\": 3}",
       {}},
      {"llama json after content",
       Format::Llama3Json,
       "Here: {\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
       "Here: {\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
       {}},
      {"llama builtin",
       Format::Llama3Json,
       "<|python_tag|>brave_search.call(query=\"Paris (France) weather\")",
       "",
       {{"brave_search", R"({"query":"Paris (France) weather"})"}}},
      {"llama builtin two args",
       Format::Llama3Json,
       "<|python_tag|>wolfram_alpha.call(query=\"2+2\", n=3)",
       "",
       {{"wolfram_alpha", R"({"query":"2+2","n":3})"}}},
      {"llama tagged json", Format::Llama3Json,
       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}", "",
       kWeather},
      {"llama bad builtin",
       Format::Llama3Json,
       "<|python_tag|>print(1)",
       "<|python_tag|>print(1)",
       {}},
      // Mistral Nemo.
      {"mistral", Format::Mistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Tokyo\", "
       "\"unit\": \"celsius\"}, \"id\": \"abc123def\"}, "
       "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Asia/Tokyo\"}}]",
       "", kTwo},
      {"mistral content first", Format::Mistral,
       "Let me see. [TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": "
       "\"Paris\"}}]",
       "Let me see.", kWeather},
      {"mistral malformed",
       Format::Mistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\"}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\"}]",
       {}},
      {"mistral empty list", Format::Mistral, "[TOOL_CALLS][]", "[TOOL_CALLS][]", {}},
      // DeepSeek R1 / V3 (written as their templates concatenate a call).
      {"deepseek v3 parallel", Format::DeepSeekV3,
       "<｜tool▁calls▁begin｜>" + ds_call1 + "\n" + ds_call2 + "<｜tool▁calls▁end｜>", "", kTwo},
      {"deepseek r1 open thinking", Format::DeepSeekR1,
       "Okay, the user wants the weather.\n</think>\n\n<｜tool▁calls▁begin｜>" + ds_call1 + "\n" +
           ds_call2 + "<｜tool▁calls▁end｜>",
       "", kTwo, "Okay, the user wants the weather.", kOpen},
      {"deepseek r1 answer",
       Format::DeepSeekR1,
       "<think>\n2+2\n</think>\n\n4.",
       "4.",
       {},
       "2+2",
       kOpen},
      {"deepseek variant opener, no end",
       Format::DeepSeekR1,
       "<｜tool_calls_begin｜>" + ds_call1,
       "",
       {kTwo[0]}},
      {"deepseek v3.1 style", Format::DeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": "
       "\"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "", kWeather},
      {"deepseek malformed",
       Format::DeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"
       "\"location\": Paris}\n```",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"
       "\"location\": Paris}\n```",
       {}},
      // Functionary.
      {"functionary 3.1", Format::FunctionaryV31,
       "<function=get_weather>{\"location\": \"Tokyo\", \"unit\": "
       "\"celsius\"}</function><function=get_time>{\"tz\": \"Asia/Tokyo\"}</function>",
       "", kTwo},
      {"functionary 3.1 python",
       Format::FunctionaryV31,
       "Running it.<|python_tag|>print(\"hi\")\nx = 1",
       "Running it.",
       {{"python", R"j({"code":"print(\"hi\")\nx = 1"})j"}}},
      {"functionary 3.1 malformed",
       Format::FunctionaryV31,
       "<function=get_weather>{\"location\"}</function>",
       "<function=get_weather>{\"location\"}</function>",
       {}},
      {"functionary 3.2", Format::FunctionaryV32,
       "get_weather\n{\"location\": \"Tokyo\", \"unit\": \"celsius\"}>>>get_time\n{\"tz\": "
       "\"Asia/Tokyo\"}",
       "", kTwo},
      {"functionary 3.2 content then call", Format::FunctionaryV32,
       "all\nLet me check.>>>get_weather\n{\"location\": \"Paris\"}", "Let me check.", kWeather},
      {"functionary 3.2 content", Format::FunctionaryV32, "all\nHello there", "Hello there", {}},
      {"functionary 3.2 no recipient",
       Format::FunctionaryV32,
       "Hello there >>> x",
       "Hello there >>> x",
       {}},
      {"functionary 3.2 python",
       Format::FunctionaryV32,
       "python\nprint(1)",
       "",
       {{"python", R"j({"code":"print(1)"})j"}}},
      // Command R7B.
      {"command r7b", Format::CommandR7B,
       "<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>[\n    "
       "{\"tool_call_id\": \"0\", \"tool_name\": "
       "\"get_weather\", \"parameters\": {\"location\": \"Paris\"}}\n]<|END_ACTION|>",
       "", kWeather, "I will look it up.", kReason},
      {"command r7b answer",
       Format::CommandR7B,
       "<|START_RESPONSE|>Hi there.<|END_RESPONSE|>",
       "Hi there.",
       {},
       "",
       kReason},
      {"command r7b malformed",
       Format::CommandR7B,
       "<|START_ACTION|>[{\"tool_name\": \"x\"}]<|END_ACTION|>",
       "<|START_ACTION|>[{\"tool_name\": \"x\"}]<|END_ACTION|>",
       {}},
      // FireFunction v2 (as its template joins calls).
      {"firefunction", Format::Firefunction,
       " functools[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Tokyo\", \"unit\": "
       "\"celsius\"}}, "
       "{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"Asia/Tokyo\\\"}\"}]",
       "", kTwo},
      {"firefunction content first", Format::Firefunction,
       "Sure. functools[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]",
       "Sure.", kWeather},
      {"firefunction malformed",
       Format::Firefunction,
       "functools[{\"name\": 1}]",
       "functools[{\"name\": 1}]",
       {}},
      // Generic.
      {"generic call", Format::Generic,
       "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}}", "",
       kWeather},
      {"generic calls", Format::Generic,
       "{\n  \"tool_calls\": [\n    {\"name\": \"get_weather\", \"arguments\": {\"location\": "
       "\"Tokyo\", \"unit\": \"celsius\"}},\n"
       "    {\"name\": \"get_time\", \"arguments\": {\"tz\": \"Asia/Tokyo\"}}\n  ]\n}",
       "", kTwo},
      {"generic response",
       Format::Generic,
       "{\"response\": \"It is \\\"sunny\\\" \\u00e9\\n\"}",
       "It is \"sunny\" é\n",
       {}},
      {"generic plain text", Format::Generic, "Just text {", "Just text {", {}},
      {"generic other json", Format::Generic, "{\"answer\": 4}", "{\"answer\": 4}", {}},
  };
}

TEST(ToolCallsParse, EveryFormat) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.label);
    const Reply reply = parse_reply(s.format, s.text, s.options);
    EXPECT_EQ(reply.content, s.content);
    EXPECT_EQ(reply.reasoning, s.reasoning);
    EXPECT_EQ(calls_of(reply), s.calls);
  }
}

TEST(ToolCallsParse, IdsAreFreshPerCallAndFollowTheSeed) {
  const std::string two =
      "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", "
      "\"arguments\": {}}</tool_call>";
  const Reply r = parse_reply(Format::Hermes, two, ParseOptions{.id_seed = 7});
  ASSERT_EQ(r.calls.size(), 2u);
  const auto alnum = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
  };
  for (const ToolCall& c : r.calls) {
    EXPECT_TRUE(c.id.starts_with("call_")) << c.id;
    EXPECT_EQ(c.id.size(), 29u) << c.id;
    EXPECT_TRUE(alnum(c.id.substr(5))) << c.id;
  }
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
  EXPECT_EQ(parse_reply(Format::Hermes, two, ParseOptions{.id_seed = 7}).calls[1].id,
            r.calls[1].id);
  EXPECT_NE(parse_reply(Format::Hermes, two, ParseOptions{.id_seed = 8}).calls[0].id,
            r.calls[0].id);
  const Reply m =
      parse_reply(Format::Mistral, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}]", false);
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].id.size(), 9u);  // Mistral's template requires 9 letters and digits
  EXPECT_TRUE(alnum(m.calls[0].id)) << m.calls[0].id;
}

// ---- streaming ----------------------------------------------------------------------------

/// True when `s` is whole UTF-8 characters (the texts here are valid UTF-8).
bool whole_characters(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

/// Feeds `text` cut at `cuts` (sorted positions), checks each delta's shape, and returns
/// the concatenation.
Reply stream(Format format, std::string_view text, const ParseOptions& options,
             const std::vector<size_t>& cuts) {
  StreamParser parser(format, options);
  Reply out;
  const auto take = [&](const Delta& d) {
    for (const std::string* part : {&d.content, &d.reasoning}) {
      EXPECT_TRUE(whole_characters(*part)) << "a cut UTF-8 character: " << *part;
    }
    out.content += d.content;
    out.reasoning += d.reasoning;
    for (const Delta::CallDelta& c : d.calls) {
      if (static_cast<size_t>(c.index) == out.calls.size()) {
        // A call's first delta: its id and name, no arguments yet.
        EXPECT_FALSE(c.id.empty());
        EXPECT_FALSE(c.name.empty());
        EXPECT_TRUE(c.arguments.empty());
        out.calls.push_back({c.id, c.name, ""});
      } else {
        ASSERT_LT(static_cast<size_t>(c.index), out.calls.size());
        EXPECT_TRUE(c.id.empty() && c.name.empty());
        out.calls[static_cast<size_t>(c.index)].arguments += c.arguments;
      }
    }
  };
  size_t prev = 0;
  for (const size_t cut : cuts) {
    take(parser.feed(text.substr(prev, cut - prev)));
    prev = cut;
  }
  take(parser.feed(text.substr(prev)));
  take(parser.finish());
  EXPECT_TRUE(parser.feed("more").empty());  // ignored after finish
  return out;
}

void expect_same(const Reply& a, const Reply& b) {
  EXPECT_EQ(a.content, b.content);
  EXPECT_EQ(a.reasoning, b.reasoning);
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].id, b.calls[i].id);
    EXPECT_EQ(a.calls[i].name, b.calls[i].name);
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
  }
}

TEST(ToolCallsStream, EqualsTheWholeParseWhereverTheTextIsCut) {
  std::mt19937 rng(1234);
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.label);
    const Reply whole = parse_reply(s.format, s.text, s.options);
    // Byte by byte, then random cuts of random density.
    std::vector<size_t> every;
    for (size_t i = 1; i < s.text.size(); ++i) every.push_back(i);
    expect_same(stream(s.format, s.text, s.options, every), whole);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<size_t> cuts;
      const int density = 1 + static_cast<int>(rng() % 8);
      for (size_t i = 1; i < s.text.size(); ++i) {
        if (static_cast<int>(rng() % 10) < density) cuts.push_back(i);
      }
      expect_same(stream(s.format, s.text, s.options, cuts), whole);
    }
  }
}

TEST(ToolCallsStream, HoldsBackOnlyWhatMayBeAMarker) {
  StreamParser p(Format::Hermes, false);
  EXPECT_EQ(p.feed("Hello <tool").content, "Hello");  // " <tool" may open a call
  EXPECT_EQ(p.feed("bar and").content, " <toolbar and");
  Delta d = p.feed(" <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": ");
  EXPECT_TRUE(d.empty());  // a call is emitted once complete
  d = p.feed("\"Paris\"}}</tool_call>");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].index, 0);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_TRUE(d.calls[0].id.starts_with("call_"));
  EXPECT_EQ(d.calls[1].arguments, R"({"location":"Paris"})");
  EXPECT_EQ(p.feed(" Done").content, "Done");
  // A character cut between pieces waits for its last byte.
  EXPECT_EQ(p.feed(" \xC3").content, " ");
  EXPECT_EQ(p.feed("\xA9!").content, "\xC3\xA9!");
  EXPECT_TRUE(p.finish().empty());
}

TEST(ToolCallsStream, ReasoningArrivesAsItIsWritten) {
  StreamParser p(Format::DeepSeekR1, kOpen);
  EXPECT_EQ(p.feed("First, ").reasoning, "First,");
  EXPECT_EQ(p.feed("the weather.</th").reasoning, " the weather.");
  const Delta d = p.feed("ink>\n\nIt is sunny.");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "It is sunny.");
}

}  // namespace
}  // namespace tessera::tool_calls
