#include "convert/json_file.h"

#include <fstream>

namespace tessera::convert {

Result<nlohmann::json> read_json_object(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::error("convert: " + file.string() + " cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return Status::error("convert: " + file.string() + " is not a JSON object (" + e.what() + ")");
  }
  if (!j.is_object()) return Status::error("convert: " + file.string() + " is not a JSON object");
  return j;
}

}  // namespace tessera::convert
