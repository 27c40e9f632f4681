// Generation under a JSON-schema grammar on stories260K: with temperature 1 and several
// seeds, every output ends where the grammar does, parses as JSON and validates against
// its schema (checked by a small validator of the supported subset, written here).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "tessera/context.h"
#include "tessera/grammar.h"
#include "tessera/json_schema.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool has_type(const Json& v, const std::string& t) {
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  return (t == "null" && v.is_null()) || (t == "boolean" && v.is_boolean()) ||
         (t == "string" && v.is_string()) || (t == "array" && v.is_array()) ||
         (t == "object" && v.is_object());
}

/// True when `v` is valid under `s` (the subset json_schema_to_grammar supports).
bool valid(const Json& s, const Json& v, const Json& root);

bool valid_object(const Json& s, const Json& v, const Json& root) {
  const Json props = s.value("properties", Json::object());
  for (const Json& key : s.value("required", Json::array())) {
    if (!v.contains(key.get<std::string>())) return false;
  }
  for (const auto& [key, value] : v.items()) {
    if (props.contains(key)) {
      if (!valid(props[key], value, root)) return false;
    } else if (s.contains("additionalProperties") && !valid(s["additionalProperties"], value, root)) {
      return false;
    }
  }
  return true;
}

bool valid_array(const Json& s, const Json& v, const Json& root) {
  if (v.size() < s.value("minItems", 0u) || v.size() > s.value("maxItems", SIZE_MAX)) return false;
  const Json prefix = s.value("prefixItems", Json::array());
  for (size_t i = 0; i < v.size(); ++i) {
    if (i < prefix.size() ? !valid(prefix[i], v[i], root)
                          : s.contains("items") && !valid(s["items"], v[i], root))
      return false;
  }
  return true;
}

bool valid(const Json& s, const Json& v, const Json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"].get<std::string>();
    return valid(ref == "#" ? root : root.at(Json::json_pointer(ref.substr(1))), v, root);
  }
  if (s.contains("anyOf") || s.contains("oneOf")) {
    const char* kw = s.contains("anyOf") ? "anyOf" : "oneOf";
    int n = 0;
    for (const Json& alt : s[kw]) n += valid(alt, v, root);
    return std::string(kw) == "anyOf" ? n > 0 : n == 1;
  }
  if (s.contains("allOf")) {
    for (const Json& one : s["allOf"]) {
      if (!valid(one, v, root)) return false;
    }
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
    return false;
  if (s.contains("type")) {
    const Json types = s["type"].is_array() ? s["type"] : Json::array({s["type"]});
    bool any = false;
    for (const Json& t : types) any = any || has_type(v, t.get<std::string>());
    if (!any) return false;
  }
  if (v.is_string()) {
    const size_t n = code_points(v.get<std::string>());
    if (n < s.value("minLength", 0u) || n > s.value("maxLength", SIZE_MAX)) return false;
  }
  if (v.is_object()) return valid_object(s, v, root);
  if (v.is_array()) return valid_array(s, v, root);
  return true;
}

// Schemas whose every part is bounded (strings, arrays, whitespace, digits), so that a
// sampled document ends within the token budget.
const char* const kSchemas[] = {
    R"({"type": "object", "additionalProperties": false, "required": ["name", "age"],
        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 10},
                       "age": {"type": "integer"},
                       "pet": {"enum": ["cat", "dog", null]},
                       "tags": {"type": "array", "items": {"type": "string", "maxLength": 4},
                                "maxItems": 2}}})",
    R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 4})",
    R"({"anyOf": [{"type": "number"}, {"type": "string", "maxLength": 6}, {"const": {"ok": true}}]})",
    R"({"$defs": {"leaf": {"type": "object", "additionalProperties": false, "required": ["id"],
                           "properties": {"id": {"type": "integer"},
                                          "label": {"type": ["string", "null"], "maxLength": 5}}}},
        "type": "object", "additionalProperties": false, "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/leaf"},
                                 "minItems": 1, "maxItems": 2},
                       "flag": {"type": "boolean"}}})",
};

TEST(JsonSchemaGeneration, SampledDocumentsValidate) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Result<std::unique_ptr<Model>> model = Model::load(path);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const Tokenizer& tok = *(*model)->tokenizer();
  constexpr int kMaxTokens = 300;
  int completed = 0;
  for (const char* schema_text : kSchemas) {
    const Json schema = Json::parse(schema_text);
    Result<std::string> gbnf = json_schema_to_grammar(schema_text);
    ASSERT_TRUE(gbnf.is_ok()) << gbnf.status().message();
    Result<std::shared_ptr<const Grammar>> grammar = Grammar::parse(*gbnf, "schema");
    ASSERT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << *gbnf;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      ContextParams cp;
      cp.n_ctx = 512;
      cp.n_threads = 2;
      Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
      ASSERT_TRUE(ctx.is_ok()) << ctx.status().message();
      SamplerParams sp;
      sp.temperature = 1.0f;
      sp.top_k = 0;
      sp.top_p = 1.0f;
      sp.min_p = 0.0f;
      sp.seed = seed;
      Result<SamplerChain> chain =
          SamplerChain::create(sp, tok.n_vocab(), make_grammar_step(*grammar, tok));
      ASSERT_TRUE(chain.is_ok()) << chain.status().message();
      ASSERT_TRUE((*ctx)->decode(tok.encode("Once upon a time", true)).is_ok());
      std::string text;
      bool ended = false;
      for (int i = 0; i < kMaxTokens && !ended; ++i) {
        Result<TokenId> t = chain->sample((*ctx)->logits());
        ASSERT_TRUE(t.is_ok()) << t.status().message() << " after " << text;
        ASSERT_TRUE(chain->accept(*t).is_ok());
        ended = tok.is_eog(*t) || chain->done();
        if (tok.is_eog(*t)) break;
        text += tok.token_to_piece(*t);
        const TokenId one[] = {*t};
        ASSERT_TRUE((*ctx)->decode(one).is_ok());
      }
      SCOPED_TRACE("schema " + std::string(schema_text) + " seed " + std::to_string(seed));
      ASSERT_TRUE(ended) << "no end within " << kMaxTokens << " tokens: " << text;
      GrammarMatcher m(*grammar);
      EXPECT_TRUE(m.accept_text(text) && m.can_end()) << text;
      const Json doc = Json::parse(text, nullptr, false);
      ASSERT_FALSE(doc.is_discarded()) << "not JSON: " << text;
      EXPECT_TRUE(valid(schema, doc, schema)) << "not valid under the schema: " << text;
      ++completed;
    }
  }
  EXPECT_EQ(completed, 16);
}

}  // namespace
}  // namespace tessera
