// Writes the seed corpora of the fuzz harnesses: small valid inputs of each surface
// (tiny models of every architecture, vocabularies' test texts, the shipped grammars,
// schemas, saved states, adapters, request bodies). Run by scripts/fuzz.sh --seeds:
//   tessera_fuzz_seeds tests/fuzz/corpus
// Each file is named seed-*; crashes the fuzzers found are kept beside them as crash-*.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "tessera/gguf.h"
#include "tessera/grammar.h"
#include "tessera/safetensors.h"
#include "quant/convert.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

fs::path g_root;

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream(dir / ("seed-" + name), std::ios::binary) << bytes;
}

std::string bytes_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// A 64-token vocabulary of `model` ("llama": SentencePiece scores; "gpt2": merges).
Status write_vocab(gguf::Writer& w, const std::string& model) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  const char* pieces[] = {"\xe2\x96\x81", "a", "b", "c", "e", "h", "l", "o", "w", "r", "d", " ", "he", "ll", "lo"};
  for (const char* p : pieces) tokens.push_back(p);
  for (int b = 0; tokens.size() < 64; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
  }
  for (size_t i = scores.size(); i < tokens.size(); ++i) {
    scores.push_back(-float(i));
    types.push_back(tokens[i][0] == '<' ? 6 : 1);
  }
  w.set("tokenizer.ggml.model", model);
  w.set("tokenizer.ggml.tokens", gguf::Value::array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(types));
  if (model == "gpt2") {
    w.set("tokenizer.ggml.merges", gguf::Value::array(std::vector<std::string>{"h e", "l l", "l o"}));
  } else {
    w.set("tokenizer.ggml.scores", gguf::Value::array(scores));
  }
  w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
  w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
  return Status::ok();
}

void gguf_seeds() {
  for (const std::string& arch : architecture_names()) {
    SynthParams p;
    p.arch = arch;
    p.n_embd = 32, p.n_layer = 1, p.n_head = 2, p.n_head_kv = 2, p.n_ff = 64, p.n_ctx = 64;
    p.n_vocab = 64, p.type = DType::F16;
    if (arch == "llama") p.vocab = [](gguf::Writer& w) { return write_vocab(w, "llama"); };
    if (arch == "gpt2") p.vocab = [](gguf::Writer& w) { return write_vocab(w, "gpt2"); };
    const std::string& path = fuzz::temp_path("seed-model");
    if (Status s = write_random_model(p, path); !s) {
      std::fprintf(stderr, "seeds: %s: %s\n", arch.c_str(), s.message().c_str());
      continue;
    }
    seed("gguf", arch, bytes_of(fuzz::read_file(path)));
  }
  gguf::Writer w;  // metadata of every value type, no tensors
  w.set("general.architecture", "llama");
  w.set("a.u8", uint8_t(1)), w.set("a.i8", int8_t(-1)), w.set("a.u16", uint16_t(2)), w.set("a.i16", int16_t(-2));
  w.set("a.u32", uint32_t(3)), w.set("a.i32", int32_t(-3)), w.set("a.u64", uint64_t(4)), w.set("a.i64", int64_t(-4));
  w.set("a.f32", 0.5f), w.set("a.f64", 0.25), w.set("a.bool", true), w.set("a.str", "text");
  w.set("a.nested", gguf::Value::array(std::vector<gguf::Value>{gguf::Value::array(std::vector<float>{1, 2})}));
  seed("gguf", "metadata", bytes_of(w.to_bytes()));
}

void tokenizer_seeds() {
  const size_t n_vocabs = fuzz::tokenizers().size();
  std::vector<std::string> texts = {"Hello world", " Hello, world!", "<s>[INST] hi [/INST]", "\xff\xfe broken \xc3",
                                    "   \t\n\n 12345 3.14159", "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\xa6\x99.cpp",
                                    "<|endoftext|><|im_start|>user\n"};
  std::ifstream inp(fuzz::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf.inp");
  std::string all((std::istreambuf_iterator<char>(inp)), std::istreambuf_iterator<char>());
  for (size_t at = 0, n = 0; n < 12 && at < all.size(); ++n) {  // the reference test texts
    const size_t end = all.find("\n__ggml_vocab_test__\n", at);
    if (end == std::string::npos) break;
    texts.push_back(all.substr(at, end - at));
    at = end + 21;
  }
  std::mt19937 rng(1);
  for (size_t v = 0; v < n_vocabs; ++v) {
    for (size_t i = 0; i < texts.size(); ++i) {
      if ((i + v) % 2) continue;  // half the texts per vocabulary keeps the corpus small
      const char head = char((v << 2) | (i % 4));
      seed("tokenize", std::to_string(v) + "-" + std::to_string(i), head + texts[i]);
    }
    std::string ids(1, char(v << 1));
    for (int k = 0; k < 64; ++k) ids += char(rng());
    seed("detokenize", std::to_string(v), ids);
  }
}

void grammar_seeds() {
  const std::vector<std::pair<std::string, std::string>> samples = {
      {"json", R"({"a": [1, -2.5e3, "x\u00e9", true, null], "b": {}})"},
      {"arithmetic", "(1+2)*3-4/5"},
      {"list", "- one\n- two\n"},
      {"chess", "1. e4 e5 2. Nf3 Nc6"}};
  for (const auto& [name, sample] : samples) {
    std::string text(Grammar::builtin(name));
    std::string feed;
    for (size_t i = 0; i < sample.size(); i += 3) feed += char(2) + sample.substr(i, 3);
    seed("grammar", name, text + '\0' + feed);
  }
  seed("grammar", "features", "root ::= (item \"\\n\")+ | [^\\x00-\\x1f]{2,5} | \"\\u00e9\"? x\n"
                              "item ::= [a-z0-9_-]* ( \"|\" | . )\nx ::= \"a\"{3} # comment\n");
}

void schema_seeds() {
  const char* schemas[] = {
      R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 8},
          "age": {"type": "integer", "minimum": 0}}, "required": ["name"], "additionalProperties": false})",
      R"({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3})",
      R"({"enum": ["red", "green", 3, null, {"a": 1}]})",
      R"({"anyOf": [{"type": "string", "pattern": "^[a-z]+\\d{2,3}$"}, {"const": true}]})",
      R"({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
          "$ref": "#/$defs/node"})",
      R"({"type": "string", "format": "date-time"})",
      R"({"oneOf": [{"type": "boolean"}, {"type": "array", "prefixItems": [{"type": "integer"}]}]})",
      R"({"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "minProperties": 1})",
      R"({"allOf": [{"type": "object", "properties": {"a": {}}}, {"required": ["a"]}]})",
      R"({})",
      R"({"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": -1.5, "maximum": 2.25}, "k": {"type": "integer", "minimum": -37, "maximum": 215}}, "required": ["n"]})",
      R"({"type": "array", "items": {"type": "string", "format": "email"}, "prefixItems": [{"format": "ipv6"}, {"format": "uuid"}, {"format": "duration"}]})",
      R"({"type": "string", "pattern": "^(?:[A-Z]\\w*|\\d{2,}-[^\\s\"])+$|x.\\u00e9$"})",
      R"({"allOf": [{"$ref": "#/$defs/a"}, {"anyOf": [{"required": ["x"]}, {"required": ["y"]}]}], "$defs": {"a": {"properties": {"x": {"type": "integer"}, "y": {"const": "z"}}}}})",
      R"s({"type": "string", "pattern": "a(?=b)", "minLength": 2})s",
  };
  int i = 0;
  for (const char* s : schemas) seed("json_schema", std::to_string(i++), s);
}

void chat_seeds() {
  std::mt19937 rng(3);
  for (int i = 0; i < 8; ++i) {
    std::string b(size_t(64 << (i % 4)), '\0');
    for (char& c : b) c = char(rng() % 4 ? 'a' + rng() % 26 : rng());
    seed("chat_template", std::to_string(i), b);
  }
}

void state_seeds() {
  Result<std::unique_ptr<Model>> m = Model::load_from_memory(fuzz::tiny_model_bytes(), "tiny");
  if (!m) fuzz::property_failed("the tiny model does not load");
  for (int n : {1, 9, 40}) {
    Result<std::unique_ptr<Context>> ctx = Context::create(**m, fuzz::tiny_context_params());
    if (!ctx) fuzz::property_failed("no context");
    std::vector<TokenId> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(TokenId((i * 7 + 3) % 64));
    if (!(*ctx)->decode(tokens)) fuzz::property_failed("decode");
    const std::string& path = fuzz::temp_path("seed-state");
    const uint8_t user[] = {'r', 'n', 'g', 0, 1};
    if (!(*ctx)->save_state(path, user)) fuzz::property_failed("save_state");
    seed("state", std::to_string(n), bytes_of(fuzz::read_file(path)));
  }
}

void lora_seeds() {
  const SynthParams p = fuzz::tiny_model_params();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto adapter = [&](const std::vector<std::string>& weights, int64_t r, DType type, bool alpha) {
    gguf::Writer w;
    w.set("general.type", "adapter");
    w.set("adapter.type", "lora");
    w.set("general.architecture", "llama");
    if (alpha) w.set("adapter.lora.alpha", float(2 * r));
    for (const std::string& name : weights) {
      const bool down = name.find("ffn_down") != std::string::npos;
      const bool widen = name.find("ffn_gate") != std::string::npos || name.find("ffn_up") != std::string::npos;
      const bool kv = name.find("attn_k") != std::string::npos || name.find("attn_v") != std::string::npos;
      const int64_t n_in = down ? p.n_ff : p.n_embd;
      const int64_t n_out = widen ? p.n_ff : kv ? p.n_embd / p.n_head * p.n_head_kv : p.n_embd;
      for (const auto& [suffix, ne0, ne1] : {std::tuple{".lora_a", n_in, r}, std::tuple{".lora_b", r, n_out}}) {
        std::vector<float> v(size_t(ne0 * ne1));
        for (float& x : v) x = normal(rng);
        std::vector<uint8_t> bytes(dtype_row_size(type, ne0) * size_t(ne1));
        quant::from_float_fn(type)(v.data(), bytes.data(), int64_t(v.size()));
        w.add_tensor(name + suffix, type, {ne0, ne1, 1, 1}, 2, bytes.data(), bytes.size());
      }
    }
    return bytes_of(w.to_bytes());
  };
  seed("lora", "q", adapter({"blk.0.attn_q.weight"}, 4, DType::F32, true));
  seed("lora", "all-f16", adapter({"blk.1.attn_q.weight", "blk.1.attn_k.weight", "blk.1.attn_v.weight",
                                   "blk.1.attn_output.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
                                   "blk.0.ffn_down.weight"},
                                  2, DType::F16, false));
}

void server_seeds() {
  const std::vector<std::pair<int, std::string>> bodies = {
      {0, R"({"model": "default", "messages": [{"role": "system", "content": "Be brief."},
          {"role": "user", "content": [{"type": "text", "text": "Hello"}]}], "max_tokens": 8,
          "temperature": 0.7, "top_p": null, "stop": ["\n", "END"], "logprobs": true, "top_logprobs": 2,
          "stream": true, "stream_options": {"include_usage": true}, "seed": 5, "n": 2})"},
      {0, R"({"messages": [{"role": "user", "content": "json"}], "response_format": {"type": "json_schema",
          "json_schema": {"schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}},
          "logit_bias": {"12": -100, "7": 5}, "frequency_penalty": 0.5})"},
      {1, R"({"prompt": "And God said", "max_tokens": 4, "echo": true, "logprobs": 2, "suffix": null})"},
      {1, R"({"prompt": [[1, 2, 3], [4, 5]], "n": 3, "presence_penalty": 1.5, "stop": "x"})"},
      {2, R"({"prompt": ["In the", 42, " beginning"], "n_predict": 8, "grammar": "root ::= [a-z ]+",
          "top_k": 40, "min_p": 0.05, "mirostat": 2, "n_probs": 3, "cache_prompt": true})"},
      {2, R"({"prompt": "x", "json_schema": {"type": "array", "items": {"enum": [1, 2]}}, "samplers": ["top_k"]})"},
      {3, R"({"input": ["first", [1, 2, 3]], "pooling": "mean", "normalize": false})"},
      {3, R"({"content": "one text", "encoding_format": "base64"})"},
      {4, R"({"content": "Hello world <s>", "add_special": true, "with_pieces": true})"},
      {5, R"({"tokens": [1, 200, 3000, 4095]})"},
      {6, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null}]})"},
  };
  int i = 0;
  for (const auto& [endpoint, body] : bodies) seed("server", std::to_string(i++), char(endpoint) + body);
}

// Small checkpoints of every float dtype, with metadata; and an empty one.
void safetensors_seeds() {
  const std::vector<uint8_t> bytes(64, 0x3C);
  const fs::path path = g_root / "safetensors.tmp";
  const std::vector<std::vector<safetensors::WriteTensor>> files = {
      {{"model.embed_tokens.weight", safetensors::Dtype::F32, {4, 4}, bytes},
       {"model.norm.weight", safetensors::Dtype::F16, {4}, std::span(bytes).first(8)},
       {"lm_head.weight", safetensors::Dtype::BF16, {2, 4}, std::span(bytes).first(16)},
       {"w.fp8", safetensors::Dtype::F8_E4M3, {2, 2}, std::span(bytes).first(4)},
       {"w.e5", safetensors::Dtype::F8_E5M2, {3}, std::span(bytes).first(3)},
       {"w.f64", safetensors::Dtype::F64, {1}, std::span(bytes).first(8)},
       {"ids", safetensors::Dtype::I64, {2}, std::span(bytes).first(16)}},
      {},
  };
  for (size_t i = 0; i < files.size(); ++i) {
    if (!safetensors::write(path.string(), files[i], {{"format", "pt"}})) continue;
    seed("safetensors", std::to_string(i), bytes_of(fuzz::read_file(path.string())));
  }
  fs::remove(path);
}

// The tokenizer files of `tessera convert`, each after the byte that picks its name
// (fuzz_tokenizer_json.cpp): byte-level and SentencePiece-style tokenizer.json, a
// SentencePiece tokenizer.model, a WordPiece vocab.txt, a tokenizer_config.json.
void tokenizer_json_seeds() {
  seed("tokenizer_json", "0",
       std::string(1, '\0') +
           R"({"added_tokens": [{"id": 6, "content": "<|endoftext|>", "special": true}],)"
           R"( "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": )"
           R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},)"
           R"( "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]},)"
           R"( "model": {"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "he": 4, "lo": 5, "<|endoftext|>": 6},)"
           R"( "merges": ["h e", ["l", "o"]]}})");
  seed("tokenizer_json", "1",
       std::string(1, '\0') +
           R"({"added_tokens": [{"id": 1, "content": "<s>", "special": true}], "pre_tokenizer": null,)"
           R"( "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",)"
           R"( "vocab": {"<unk>": 0, "<s>": 1, "<0x41>": 2, "\u2581": 3, "a": 4, "\u2581a": 5}, "merges": [["\u2581", "a"]]}})");
  std::string model;  // ModelProto{1: SentencePiece{1: piece, 2: score, 3: type}}...
  const std::pair<const char*, int> pieces[] = {{"<unk>", 2}, {"<s>", 3}, {"</s>", 3}, {"<0x41>", 6}, {"\xe2\x96\x81" "a", 1}};
  for (const auto& [text, type] : pieces) {
    const std::string t = text;
    std::string piece = std::string(1, char(1 << 3 | 2)) + char(t.size()) + t + char(2 << 3 | 5) + std::string("\0\0\x80\xbf", 4) +
                        char(3 << 3) + char(type);
    model += std::string(1, char(1 << 3 | 2)) + char(piece.size()) + piece;
  }
  model += std::string("\x1a\x02\x18\x00", 4);  // NormalizerSpec{add_dummy_prefix: false}
  seed("tokenizer_json", "2", std::string(1, '\1') + model);
  seed("tokenizer_json", "3", std::string(1, '\2') + "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\n");
  seed("tokenizer_json", "4",
       std::string(1, '\3') +
           R"({"bos_token": {"content": "h"}, "eos_token": "<|end|>", "add_bos_token": true,)"
           R"( "chat_template": [{"name": "default", "template": "{{ x }}"}, {"name": "rag", "template": "{{ y }}"}]})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tessera_fuzz_seeds CORPUS_DIR\n");
    return 2;
  }
  fuzz::quiet();
  g_root = argv[1];
  gguf_seeds();
  tokenizer_seeds();
  grammar_seeds();
  schema_seeds();
  chat_seeds();
  state_seeds();
  lora_seeds();
  server_seeds();
  safetensors_seeds();
  tokenizer_json_seeds();
  return 0;
}
