// add_hf_vocab (hf_vocab.h): the vocabulary of the folder's first tokenizer file, then the
// special tokens as the reference's SpecialVocab finds them: tokenizer_config.json's
// "<kind>_token" (a string or {"content": ...}) looked up among the tokens, then
// config.json's "<kind>_token_id", then (EOS only) generation_config.json's eos_token_id
// (an int, or a list whose first id is the EOS); add_bos_token / add_eos_token; and the
// chat template (a string, a list of {name, template} → tokenizer.chat_template[.NAME],
// or chat_template.jinja beside it).
#include "convert/hf_vocab.h"
#include "convert/json_file.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

namespace tessera::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The JSON object in dir/name; an empty object when the file is absent.
Result<json> optional_json(const fs::path& dir, const char* name) {
  const fs::path file = dir / name;
  if (!fs::exists(file)) return json::object();
  return read_json_object(file);
}

struct SpecialKind {
  const char* hf;   // tokenizer_config.json "<hf>_token", config.json "<hf>_token_id"
  const char* key;  // tokenizer.ggml.<key>
};
constexpr SpecialKind kSpecials[] = {{"bos", "bos_token_id"},     {"eos", "eos_token_id"},
                                     {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
                                     {"pad", "padding_token_id"}, {"cls", "cls_token_id"},
                                     {"mask", "mask_token_id"}};

int64_t find_token(const HfVocab& v, const std::string& text) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == text) return int64_t(i);
  }
  return -1;
}

/// tokenizer_config.json's text of one special token ("" when absent).
std::string config_token(const json& tc, const std::string& kind) {
  const std::string k = kind + "_token";
  if (!tc.contains(k)) return "";
  const json& e = tc[k];
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && e.contains("content") && e["content"].is_string())
    return e["content"].get<std::string>();
  return "";
}

/// BERT's vocab.txt names its specials only by convention; tokenizer_config.json may rename them.
const char* wordpiece_default(const std::string& kind) {
  if (kind == "unk") return "[UNK]";
  if (kind == "sep") return "[SEP]";
  if (kind == "pad") return "[PAD]";
  if (kind == "cls") return "[CLS]";
  if (kind == "mask") return "[MASK]";
  return "";
}

void add_special_ids(HfVocab& v, const json& tc, const json& config, const json& gen,
                     gguf::Writer& w) {
  const int64_t n = int64_t(v.tokens.size());
  auto valid = [n](int64_t id) { return id >= 0 && id < n; };
  for (const SpecialKind& s : kSpecials) {
    const std::string kind = s.hf;
    int64_t id = kind == "bos"   ? v.bos_id
                 : kind == "eos" ? v.eos_id
                 : kind == "unk" ? v.unk_id
                 : kind == "pad" ? v.pad_id
                                 : -1;
    std::string text = config_token(tc, kind);
    if (text.empty() && v.model == "bert") text = wordpiece_default(kind);
    if (!text.empty()) {
      if (const int64_t found = find_token(v, text); found >= 0) id = found;
    }
    const std::string id_key = kind + "_token_id";
    if (!valid(id) && config.contains(id_key) && config[id_key].is_number_integer())
      id = config[id_key].get<int64_t>();
    if (!valid(id) && kind == "eos" && gen.contains("eos_token_id")) {
      const json& e = gen["eos_token_id"];
      if (e.is_number_integer()) id = e.get<int64_t>();
      if (e.is_array() && !e.empty() && e[0].is_number_integer()) id = e[0].get<int64_t>();
    }
    if (!valid(id)) continue;
    if (v.model == "bert" && v.types[size_t(id)] == kNormal) v.types[size_t(id)] = kControl;
    w.set(std::string("tokenizer.ggml.") + s.key, uint32_t(id));
  }
}

Status add_chat_templates(const fs::path& dir, const json& tc, gguf::Writer& w) {
  if (tc.contains("chat_template") && tc["chat_template"].is_string()) {
    w.set("tokenizer.chat_template", tc["chat_template"].get<std::string>());
  } else if (tc.contains("chat_template") && tc["chat_template"].is_array()) {
    std::vector<std::string> names;
    for (const json& t : tc["chat_template"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
          !t.contains("template") || !t["template"].is_string()) {
        return Status::error("convert: " + (dir / "tokenizer_config.json").string() +
                             ": a chat_template entry is not {\"name\": ..., \"template\": ...}");
      }
      const std::string name = t["name"].get<std::string>();
      if (name == "default") {
        w.set("tokenizer.chat_template", t["template"].get<std::string>());
      } else {
        w.set("tokenizer.chat_template." + name, t["template"].get<std::string>());
        names.push_back(name);
      }
    }
    if (!names.empty()) w.set("tokenizer.chat_templates", gguf::Value::array(names));
  } else if (fs::exists(dir / "chat_template.jinja")) {
    std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
    w.set("tokenizer.chat_template",
          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  return Status::ok();
}

Result<HfVocab> read_vocab_file(const fs::path& dir, int64_t vocab_size) {
  if (fs::exists(dir / "tokenizer.json"))
    return read_tokenizer_json(dir / "tokenizer.json", vocab_size);
  if (fs::exists(dir / "tokenizer.model"))
    return read_sentencepiece_model(dir / "tokenizer.model", vocab_size);
  if (fs::exists(dir / "vocab.txt")) return read_wordpiece_vocab(dir / "vocab.txt");
  return Status::error("convert: " + dir.string() +
                       " has no tokenizer.json, tokenizer.model or vocab.txt");
}

}  // namespace

bool has_hf_vocab(const fs::path& dir) {
  return fs::exists(dir / "tokenizer.json") || fs::exists(dir / "tokenizer.model") ||
         fs::exists(dir / "vocab.txt");
}

Status add_hf_vocab(const fs::path& dir, const std::string& arch, gguf::Writer& w) {
  Result<json> config = optional_json(dir, "config.json");
  if (!config) return config.status();
  Result<json> tc = optional_json(dir, "tokenizer_config.json");
  if (!tc) return tc.status();
  Result<json> gen = optional_json(dir, "generation_config.json");
  if (!gen) return gen.status();
  const int64_t vocab_size =
      config->contains("vocab_size") && (*config)["vocab_size"].is_number_integer()
          ? (*config)["vocab_size"].get<int64_t>()
          : 0;
  Result<HfVocab> v = read_vocab_file(dir, vocab_size);
  if (!v) return v.status();
  add_special_ids(*v, *tc, *config, *gen, w);  // first: it marks BERT's specials as control
  w.set("tokenizer.ggml.model", v->model);
  w.set("tokenizer.ggml.pre", v->pre);
  w.set("tokenizer.ggml.tokens", gguf::Value::array(v->tokens));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(v->types));
  if (!v->scores.empty()) w.set("tokenizer.ggml.scores", gguf::Value::array(v->scores));
  if (!v->merges.empty()) w.set("tokenizer.ggml.merges", gguf::Value::array(v->merges));
  if (v->add_space_prefix) w.set("tokenizer.ggml.add_space_prefix", *v->add_space_prefix);
  if (v->ignore_merges) w.set("tokenizer.tessera.ignore_merges", *v->ignore_merges);
  if (!v->pre_regexes.empty()) w.set("tokenizer.tessera.pre_regexes", gguf::Value::array(v->pre_regexes));
  for (const char* flag : {"add_bos_token", "add_eos_token"}) {
    if (tc->contains(flag) && (*tc)[flag].is_boolean())
      w.set(std::string("tokenizer.ggml.") + flag, (*tc)[flag].get<bool>());
  }
  if (v->model == "bert" || arch.find("bert") != std::string::npos) {
    w.set("tokenizer.ggml.token_type_count",
          uint32_t(config->contains("type_vocab_size") &&
                           (*config)["type_vocab_size"].is_number_integer()
                       ? (*config)["type_vocab_size"].get<int64_t>()
                       : 1));
  }
  return add_chat_templates(dir, *tc, w);
}

}  // namespace tessera::convert
