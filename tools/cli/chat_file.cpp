// /save and /load of `tessera chat`: the conversation as JSON messages.
#include "chat_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera::cli {

using nlohmann::json;

Status save_conversation(const std::string& path, const std::vector<ChatMessage>& messages) {
  json list = json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  // A reply may hold bytes that are not UTF-8 (a model's byte tokens): they become U+FFFD
  // rather than failing the save.
  const std::string text =
      json{{"messages", list}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::error(path + ": cannot open the file for writing");
  out << text;
  out.close();
  if (!out) return Status::error(path + ": cannot write the conversation");
  return Status::ok();
}

Result<std::vector<ChatMessage>> load_conversation(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::error(path + ": cannot read the file");
  const json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::error(path + ": not JSON");
  if (!doc.is_object() || !doc.contains("messages") || !doc["messages"].is_array()) {
    return Status::error(path + ": expected an object with a \"messages\" array");
  }
  std::vector<ChatMessage> messages;
  const json& list = doc["messages"];
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + ": messages[" + std::to_string(i) + "]";
    const json& m = list[i];
    if (!m.is_object()) return Status::error(at + ": expected an object with role and content");
    if (!m.contains("role") || !m["role"].is_string()) {
      return Status::error(at + ".role: expected a string (system, user or assistant)");
    }
    if (!m.contains("content") || !m["content"].is_string()) {
      return Status::error(at + ".content: expected a string");
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant") {
      return Status::error(at + ".role: '" + role + "' is not system, user or assistant");
    }
    messages.push_back({role, m["content"].get<std::string>()});
  }
  return messages;
}

}  // namespace tessera::cli
