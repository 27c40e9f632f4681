#include "convert/hf_arch.h"
#include "convert/json_file.h"

namespace tessera::convert {

Result<HfConfig> HfConfig::load(const std::filesystem::path& dir) {
  HfConfig c;
  c.path_ = (dir / "config.json").string();
  if (!std::filesystem::exists(c.path_)) return Status::error("convert: " + dir.string() + " has no config.json");
  Result<nlohmann::json> j = read_json_object(c.path_);
  if (!j) return j.status();
  c.j_ = std::move(*j);
  // Multimodal checkpoints nest the language model's settings (text_config); the keys read
  // here are the language model's.
  if (c.j_.contains("text_config") && c.j_["text_config"].is_object()) {
    for (const auto& [k, v] : c.j_["text_config"].items()) {
      if (!c.j_.contains(k)) c.j_[k] = v;
    }
  }
  return c;
}

Result<int64_t> HfConfig::integer(const std::string& key) const {
  if (!has(key)) return Status::error("convert: " + path_ + " has no '" + key + "'");
  if (!j_[key].is_number_integer()) return Status::error("convert: " + path_ + ": '" + key + "' is not an integer");
  return j_[key].get<int64_t>();
}

int64_t HfConfig::integer_or(const std::string& key, int64_t fallback) const {
  return has(key) && j_[key].is_number_integer() ? j_[key].get<int64_t>() : fallback;
}

Result<double> HfConfig::number(const std::string& key) const {
  if (!has(key)) return Status::error("convert: " + path_ + " has no '" + key + "'");
  if (!j_[key].is_number()) return Status::error("convert: " + path_ + ": '" + key + "' is not a number");
  return j_[key].get<double>();
}

Result<std::map<std::string, int64_t>> HfConfig::integers(std::initializer_list<const char*> keys) const {
  std::map<std::string, int64_t> out;
  for (const char* k : keys) {
    Result<int64_t> x = integer(k);
    if (!x) return x.status();
    out[k] = *x;
  }
  return out;
}

double HfConfig::number_or(const std::string& key, double fallback) const {
  return has(key) && j_[key].is_number() ? j_[key].get<double>() : fallback;
}

bool HfConfig::boolean_or(const std::string& key, bool fallback) const {
  return has(key) && j_[key].is_boolean() ? j_[key].get<bool>() : fallback;
}

std::string HfConfig::hf_arch() const {
  if (j_.contains("architectures") && j_["architectures"].is_array() && !j_["architectures"].empty() &&
      j_["architectures"][0].is_string()) {
    return j_["architectures"][0].get<std::string>();
  }
  return "";
}

}  // namespace tessera::convert
