// The tokenizer part of `tessera convert` against the reference's vocabularies: each shared
// GGUF vocabulary is written back as the Hugging Face files (tests/common/
// hf_tokenizer_files.h), converted with add_hf_vocab / --vocab-only, and the converted
// vocabulary must tokenize every string of ../shared/vocab/*.inp to the same ids as the
// original, with the same tokens, types, special ids and flags. Bad tokenizer files are
// refused by name.
#include "convert/hf_vocab.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/hf_tokenizer_files.h"
#include "common/test_util.h"
#include "common/vocab_vectors.h"
#include "tessera/convert.h"
#include "tessera/gguf.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using test::HfTokenizerForm;

struct VocabCase {
  const char* model;  // under ../shared
  HfTokenizerForm form;
  const char* pre;  // the tokenizer.ggml.pre the conversion must find
};

constexpr VocabCase kVocabCases[] = {
    {"archs/models/llama3.gguf", HfTokenizerForm::Auto, "llama3"},
    {"archs/models/qwen2.gguf", HfTokenizerForm::PairMerges, "qwen2"},
    {"archs/models/gpt2.gguf", HfTokenizerForm::Auto, "gpt-2"},
    {"archs/models/bloom.gguf", HfTokenizerForm::Auto, "bloom"},
    {"archs/models/falcon.gguf", HfTokenizerForm::Auto, "falcon"},
    {"archs/models/refact.gguf", HfTokenizerForm::Auto, "starcoder"},
    {"archs2/models/deepseek2.gguf", HfTokenizerForm::PairMerges, "deepseek-llm"},
    {"vocab/ggml-vocab-gpt-2.gguf", HfTokenizerForm::PairMerges, "gpt-2"},
    {"vocab/ggml-vocab-starcoder.gguf", HfTokenizerForm::Auto, "starcoder"},
    {"vocab/ggml-vocab-falcon.gguf", HfTokenizerForm::Auto, "falcon"},
    {"archs2/models/mixtral.gguf", HfTokenizerForm::Auto, "default"},
    {"archs/models/gemma.gguf", HfTokenizerForm::Auto, "default"},
    {"vocab/ggml-vocab-llama-spm.gguf", HfTokenizerForm::Auto, "default"},
    {"vocab/ggml-vocab-llama-spm.gguf", HfTokenizerForm::SpmJson, "default"},
    {"archs2/models/bert.gguf", HfTokenizerForm::Auto, "default"},
};

std::vector<std::string> test_strings() {
  std::vector<std::string> all = {"Hello world", " <s> x</s>", "<|endoftext|> a", "[CLS] the [SEP]",
                                  "I'll 12345 \n\n  x"};
  for (const char* f :
       {"ggml-vocab-gpt-2", "ggml-vocab-falcon", "ggml-vocab-llama-spm", "ggml-vocab-starcoder"}) {
    const std::string path = test::shared_file(std::string("vocab/") + f + ".gguf.inp");
    if (path.empty()) continue;
    for (std::string& s : test::read_inputs(path)) all.push_back(std::move(s));
  }
  return all;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("tessera_hfvocab_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string case_name(const VocabCase& c, size_t i) {
  std::string n = fs::path(c.model).stem().string() + "_" + std::to_string(i);
  for (char& ch : n) ch = std::isalnum(uint8_t(ch)) ? ch : '_';
  return n;
}

/// `convert --vocab-only` of `dir` into dir/vocab.gguf.
ConvertParams vocab_only_params(const fs::path& dir) {
  ConvertParams p;
  p.input_dir = dir.string();
  p.output_path = (dir / "vocab.gguf").string();
  p.vocab_only = true;
  return p;
}

class HfVocabRoundTrip : public ::testing::TestWithParam<size_t> {};

TEST_P(HfVocabRoundTrip, TokenizesAsTheOriginal) {
  const VocabCase& c = kVocabCases[GetParam()];
  TESSERA_REQUIRE_SHARED(model, c.model);
  const fs::path dir = fresh_dir(case_name(c, GetParam()));
  Result<std::unique_ptr<gguf::File>> ref = gguf::File::open(model);
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  test::write_hf_tokenizer(**ref, dir, c.form);
  const std::string arch = *(*ref)->find("general.architecture")->as_string();
  std::ofstream(dir / "config.json")
      << nlohmann::json{{"architectures", {"LlamaForCausalLM"}}}.dump();
  gguf::Writer w;
  w.set("general.architecture", arch);
  ASSERT_TRUE(convert::add_hf_vocab(dir, arch, w).is_ok())
      << convert::add_hf_vocab(dir, arch, w).message();
  ASSERT_TRUE(w.write((dir / "out.gguf").string()).is_ok());
  Result<std::unique_ptr<gguf::File>> got = gguf::File::open((dir / "out.gguf").string());
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  EXPECT_EQ(*(*got)->find("tokenizer.ggml.pre")->as_string(), c.pre);
  if (c.form !=
      HfTokenizerForm::SpmJson) {  // SentencePiece-style tokenizer.json scores are merge ranks
    for (const char* key :
         {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.scores",
          "tokenizer.ggml.merges", "tokenizer.ggml.add_space_prefix"}) {
      const gguf::Value* a = (*ref)->find(key);
      const gguf::Value* b = (*got)->find(key);
      ASSERT_EQ(a == nullptr, b == nullptr) << key;
      if (a != nullptr) {
        EXPECT_TRUE(*a == *b) << key << ": " << a->to_string() << " vs " << b->to_string();
      }
    }
  }
  Result<std::unique_ptr<Tokenizer>> a = Tokenizer::from_gguf(**ref);
  Result<std::unique_ptr<Tokenizer>> b = Tokenizer::from_gguf(**got);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << (b ? "" : b.status().message());
  EXPECT_EQ((*b)->n_vocab(), (*a)->n_vocab());
  EXPECT_EQ((*b)->bos(), (*a)->bos());
  EXPECT_EQ((*b)->eos(), (*a)->eos());
  EXPECT_EQ((*b)->unk(), (*a)->unk());
  EXPECT_EQ((*b)->sep(), (*a)->sep());
  EXPECT_EQ((*b)->add_bos_token(), (*a)->add_bos_token());
  EXPECT_EQ((*b)->add_eos_token(), (*a)->add_eos_token());
  size_t n = 0, differ = 0;
  for (const std::string& s : test_strings()) {
    for (bool special : {false, true}) {
      ++n;
      const std::vector<TokenId> want = (*a)->encode(s, true, special),
                                 have = (*b)->encode(s, true, special);
      if (want != have && ++differ <= 3) {
        ADD_FAILURE() << "ids differ on " << nlohmann::json(s).dump() << ": "
                      << nlohmann::json(want).dump() << " vs " << nlohmann::json(have).dump();
      }
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << n;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Shared, HfVocabRoundTrip,
                         ::testing::Range<size_t>(0, std::size(kVocabCases)),
                         [](const auto& param_info) {
                           return case_name(kVocabCases[param_info.param], param_info.param);
                         });

TEST(HfVocabOnly, WritesTheTokenizerAndNoTensors) {
  TESSERA_REQUIRE_SHARED(model, "archs/models/llama3.gguf");
  const fs::path dir = fresh_dir("vocab_only");
  Result<std::unique_ptr<gguf::File>> ref = gguf::File::open(model);
  ASSERT_TRUE(ref.is_ok());
  test::write_hf_tokenizer(**ref, dir);
  // Only `architectures`: the llama.* keys cannot be made, and are not needed.
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"]})";
  nlohmann::json tc;
  std::ifstream(dir / "tokenizer_config.json") >> tc;
  tc["chat_template"] =
      nlohmann::json::array({{{"name", "default"}, {"template", "{{ messages }}"}},
                             {{"name", "tool_use"}, {"template", "{{ tools }}"}}});
  std::ofstream(dir / "tokenizer_config.json") << tc.dump();
  const ConvertParams p = vocab_only_params(dir);
  Result<ConvertReport> r = convert_checkpoint(p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->vocab);
  EXPECT_EQ(r->n_tensors, 0u);
  Result<std::unique_ptr<gguf::File>> got = gguf::File::open(p.output_path);
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  EXPECT_TRUE((*got)->tensors().empty());
  EXPECT_EQ(*(*got)->find("general.architecture")->as_string(), "llama");
  EXPECT_EQ(*(*got)->find("tokenizer.chat_template")->as_string(), "{{ messages }}");
  EXPECT_EQ(*(*got)->find("tokenizer.chat_template.tool_use")->as_string(), "{{ tools }}");
  EXPECT_TRUE(*(*got)->find("tokenizer.ggml.tokens") == *(*ref)->find("tokenizer.ggml.tokens"));
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf(**got);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ((*t)->encode("Hello world", false),
            (*Tokenizer::from_gguf(**ref))->encode("Hello world", false));

  fs::remove(dir / "tokenizer.json");
  Result<ConvertReport> none = convert_checkpoint(p);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("has no tokenizer.json, tokenizer.model or vocab.txt"),
            std::string::npos)
      << none.status().message();
  fs::remove_all(dir);
}

// tokenizer.json's model.ignore_merges where the pre-tokenizer's own rule differs (gpt-oss:
// gpt-4o's regexes, merges ignored): written as tokenizer.tessera.ignore_merges, and a
// pre-token that is a token is then taken whole even where no merge makes it.
TEST(HfVocabIgnoreMerges, ATokenNoMergeMakesIsTakenWhole) {
  TESSERA_REQUIRE_SHARED(model, "vocab/ggml-vocab-gpt-2.gguf");
  Result<std::unique_ptr<gguf::File>> ref = gguf::File::open(model);
  ASSERT_TRUE(ref.is_ok());
  const TokenId world = (*Tokenizer::from_gguf(**ref))->encode(" world", false).at(0);
  for (const bool ignore : {false, true}) {
    SCOPED_TRACE(ignore ? "ignore_merges" : "merges");
    const fs::path dir = fresh_dir(ignore ? "ignore_merges" : "merges");
    test::write_hf_tokenizer(**ref, dir);
    std::ofstream(dir / "config.json") << R"({"architectures": ["GPT2LMHeadModel"]})";
    nlohmann::json j;
    std::ifstream(dir / "tokenizer.json") >> j;
    j["model"]["ignore_merges"] = ignore;
    nlohmann::json& merges = j["model"]["merges"];
    const size_t before = merges.size();
    for (size_t i = 0; i < merges.size(); ++i) {  // no merge makes "Ġworld" now
      const std::string m = merges[i].get<std::string>();
      if (m.substr(0, m.find(' ', 1)) + m.substr(m.find(' ', 1) + 1) == "\u0120world") {
        merges.erase(i);
        break;
      }
    }
    ASSERT_EQ(merges.size(), before - 1);
    std::ofstream(dir / "tokenizer.json") << j.dump();
    const ConvertParams p = vocab_only_params(dir);
    Result<ConvertReport> r = convert_checkpoint(p);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    Result<std::unique_ptr<gguf::File>> got = gguf::File::open(p.output_path);
    ASSERT_TRUE(got.is_ok());
    const gguf::Value* key = (*got)->find("tokenizer.tessera.ignore_merges");
    // gpt-2's rule merges: the key is written only where the model says otherwise.
    ASSERT_EQ(key != nullptr, ignore);
    if (key) {
      EXPECT_TRUE(*key->as_bool());
    }
    const std::vector<TokenId> ids = (*Tokenizer::from_gguf(**got))->encode(" world", false);
    if (ignore) {
      EXPECT_EQ(ids, std::vector<TokenId>{world});
    } else {
      EXPECT_GT(ids.size(), 1u);
    }
    fs::remove_all(dir);
  }
}

struct BadFile {
  const char* name;
  const char* file;
  std::string content;
  const char* expect;  // in the message, beside the file's name
};

TEST(HfVocabBadFiles, EachIsRefusedByName) {
  const std::string bpe_head =
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": )";
  const std::string bytes_pre = R"(, "pre_tokenizer": {"type": "ByteLevel", "use_regex": true}})";
  const BadFile cases[] = {
      {"not_json", "tokenizer.json", "{\"model\": ", "is not a JSON object"},
      {"unigram", "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})",
       "model.type is \"Unigram\""},
      {"bad_merge", "tokenizer.json", bpe_head + R"(["ab"]})" + bytes_pre,
       "merge 0 \"ab\" is not two pieces"},
      {"bad_pair", "tokenizer.json", bpe_head + R"([["a"]]})" + bytes_pre, "merge 0 is neither"},
      {"twice", "tokenizer.json",
       R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": ["a b"]})" + bytes_pre,
       "id 0 is both"},
      {"negative_id", "tokenizer.json",
       R"({"model": {"type": "BPE", "vocab": {"a": -4}, "merges": ["a b"]})" + bytes_pre,
       "has id -4, out of range"},
      {"unknown_regex", "tokenizer.json",
       bpe_head + R"(["a b"]}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "x+"}}})",
       "no tessera pre-tokenizer applies"},
      {"whitespace_pre", "tokenizer.json",
       bpe_head + R"(["a b"]}, "pre_tokenizer": {"type": "Whitespace"}})",
       "\"Whitespace\" is not one convert maps"},
      {"spm_truncated", "tokenizer.model", std::string("\x0a\x10\x0a\x03", 4) + "ab",
       "malformed protobuf"},
      {"spm_bad_type", "tokenizer.model",
       std::string("\x0a\x05\x0a\x01"
                   "a\x18\x09",
                   7),
       "has type 9, not 1..6"},
      {"spm_empty", "tokenizer.model", std::string("\x10\x01", 2), "no pieces"},
      {"wordpiece_blank", "vocab.txt", "[PAD]\n\nthe\n", "line 2 is empty"},
  };
  for (const BadFile& c : cases) {
    const fs::path dir = fresh_dir(std::string("bad_") + c.name);
    std::ofstream(dir / c.file, std::ios::binary) << c.content;
    gguf::Writer w;
    const Status s = convert::add_hf_vocab(dir, "llama", w);
    ASSERT_FALSE(s.is_ok()) << c.name;
    EXPECT_NE(s.message().find(c.file), std::string::npos) << c.name << ": " << s.message();
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.name << ": " << s.message();
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace tessera
