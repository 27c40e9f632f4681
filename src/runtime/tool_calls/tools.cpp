// OpenAI `tools` and `tool_choice`, from JSON text.
#include <nlohmann/json.hpp>

#include "tessera/tool_calls.h"

namespace tessera::tool_calls {
namespace {

using Json = nlohmann::ordered_json;  // keeps the schema's key order (it orders arguments)

Result<Json> parse_json(std::string_view text, std::string_view what) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    return Status::error(std::string(what) + ": not JSON (" + e.what() + ")");
  }
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<Tool> parse_tool(const Json& entry, const std::string& where) {
  const auto fail = [&](const std::string& why) { return Status::error(where + ": " + why); };
  if (!entry.is_object()) return fail("expected an object, got " + entry.dump());
  const auto type = entry.find("type");
  if (type == entry.end()) return fail("'type' is missing");
  if (!type->is_string() || *type != "function") {
    return fail("type " + type->dump() + " is not supported (only 'function')");
  }
  const auto function = entry.find("function");
  if (function == entry.end()) return fail("'function' is missing");
  if (!function->is_object()) return fail("'function' must be an object");
  const auto name = function->find("name");
  if (name == function->end()) return fail("'function.name' is missing");
  if (!name->is_string() || !valid_name(name->get<std::string>())) {
    return fail("the name " + name->dump() +
                " must be 1 to 64 letters, digits, underscores and dashes");
  }
  Tool tool;
  tool.name = name->get<std::string>();
  const std::string named = where + " (" + tool.name + ")";
  if (const auto d = function->find("description"); d != function->end() && !d->is_null()) {
    if (!d->is_string()) return Status::error(named + ": 'description' must be a string");
    tool.description = d->get<std::string>();
  }
  tool.parameters = "{\"type\":\"object\"}";
  if (const auto p = function->find("parameters"); p != function->end() && !p->is_null()) {
    if (!p->is_object())
      return Status::error(named + ": 'parameters' must be a JSON schema object");
    tool.parameters = p->dump();
  }
  return tool;
}

}  // namespace

Result<std::vector<Tool>> parse_tools(std::string_view tools_json) {
  Result<Json> j = parse_json(tools_json, "tools");
  if (!j) return j.status();
  if (j->is_null()) return std::vector<Tool>{};
  if (!j->is_array()) return Status::error("tools: expected an array of tools, got " + j->dump());
  std::vector<Tool> tools;
  for (size_t i = 0; i < j->size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    Result<Tool> tool = parse_tool((*j)[i], where);
    if (!tool) return tool.status();
    for (size_t k = 0; k < tools.size(); ++k) {
      if (tools[k].name == tool->name) {
        return Status::error(where + ": the name '" + tool->name + "' repeats tools[" +
                             std::to_string(k) + "]");
      }
    }
    tools.push_back(std::move(*tool));
  }
  return tools;
}

Result<Choice> parse_choice(std::string_view tool_choice_json, const std::vector<Tool>& tools) {
  Choice choice;
  if (tool_choice_json.find_first_not_of(" \t\r\n") == std::string_view::npos) return choice;
  Result<Json> j = parse_json(tool_choice_json, "tool_choice");
  if (!j) return j.status();
  const auto bad = [&] {
    return Status::error(
        "tool_choice: expected \"auto\", \"none\", \"required\" or "
        "{\"type\": \"function\", \"function\": {\"name\": ..}}, got " +
        j->dump());
  };
  if (j->is_null()) return choice;
  if (j->is_string()) {
    const std::string s = j->get<std::string>();
    if (s == "auto")
      choice.kind = Choice::Auto;
    else if (s == "none")
      choice.kind = Choice::None;
    else if (s == "required")
      choice.kind = Choice::Required;
    else
      return bad();
  } else if (j->is_object()) {
    const auto type = j->find("type");
    const auto function = j->find("function");
    if (type == j->end() || *type != "function" || function == j->end() || !function->is_object())
      return bad();
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string()) return bad();
    choice.kind = Choice::Named;
    choice.name = name->get<std::string>();
    bool known = false;
    for (const Tool& t : tools) known = known || t.name == choice.name;
    if (!known) return Status::error("tool_choice: there is no tool named '" + choice.name + "'");
  } else {
    return bad();
  }
  if (choice.kind == Choice::Required && tools.empty()) {
    return Status::error("tool_choice: \"required\" needs tools");
  }
  return choice;
}

}  // namespace tessera::tool_calls
