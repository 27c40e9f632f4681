// llama-server's `response_fields` (POST /completion): the final object cut down to the
// fields a client names.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/json_fields.h"

namespace tessera::server {

/// `response_fields`: a list of strings (absent: empty, the whole object); a 400 naming
/// the field, or the element, when it is anything else.
std::vector<std::string> decode_response_fields(const Fields& body);

/// The members of `answer` that `paths` name, as llama-server picks them: a path is keys
/// separated by '/', followed through nested objects; the value found is a top-level
/// member named by the whole path ("generation_settings/n_predict" stays that name). A
/// path that leads nowhere is left out, without an error.
nlohmann::json select_response_fields(const nlohmann::json& answer, const std::vector<std::string>& paths);

}  // namespace tessera::server
