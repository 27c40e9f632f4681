// The JSON files of a checkpoint folder (config.json, the shard index, tokenizer files).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tessera/status.h"

namespace tessera::convert {

/// The JSON object in `file`; an error naming the file when it cannot be read or is not a
/// JSON object (with the parser's reason).
Result<nlohmann::json> read_json_object(const std::filesystem::path& file);

}  // namespace tessera::convert
