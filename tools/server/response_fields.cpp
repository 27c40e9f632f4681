#include "server/response_fields.h"

#include <algorithm>

#include "server/errors.h"

namespace tessera::server {

std::vector<std::string> decode_response_fields(const Fields& body) {
  std::vector<std::string> paths;
  const json* list = body.array("response_fields");
  if (!list) return paths;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& p = (*list)[i];
    if (!p.is_string()) {
      const std::string name = body.name("response_fields") + "[" + std::to_string(i) + "]";
      throw bad_field(name, "'" + name + "' must be a string (a field path such as \"generation_settings/n_predict\"), "
                                 "not " + type_words(p));
    }
    paths.push_back(p.get<std::string>());
  }
  return paths;
}

nlohmann::json select_response_fields(const nlohmann::json& answer, const std::vector<std::string>& paths) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& path : paths) {
    const nlohmann::json* at = &answer;
    size_t begin = 0;
    while (at != nullptr) {
      const size_t end = std::min(path.find('/', begin), path.size());
      const auto it = at->is_object() ? at->find(path.substr(begin, end - begin)) : at->end();
      at = it != at->end() ? &*it : nullptr;
      if (end == path.size()) break;
      begin = end + 1;
    }
    if (at != nullptr) out[path] = *at;
  }
  return out;
}

}  // namespace tessera::server
