// A JSON document (nlohmann's ordered_json, so objects keep their key order, as Python's
// json.loads does) as a template value.
#pragma once

#include <nlohmann/json.hpp>

#include "template/value.h"

namespace tessera::jinja {

Value from_json(const nlohmann::ordered_json& j);

}  // namespace tessera::jinja
