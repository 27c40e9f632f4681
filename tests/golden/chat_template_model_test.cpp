// ChatTemplate::for_model: the template read from a model file's tokenizer.chat_template
// (stories260K rewritten with a template added) and rendered as Jinja, the override, a
// template that does not parse, no double BOS, and the chatml fallback.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "common/test_util.h"
#include "tessera/chat.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "tessera/model.h"

namespace tessera {
namespace {

/// stories260K with `tokenizer.chat_template` set to `jinja`, written to a temp file.
std::string with_template(const std::string& source, const std::string& jinja) {
  Result<std::unique_ptr<gguf::File>> in = gguf::File::open(source);
  EXPECT_TRUE(in.is_ok()) << in.status().message();
  if (!in) return "";
  gguf::Writer w;
  for (const auto& [key, value] : (*in)->metadata()) w.set(key, value);
  w.set("tokenizer.chat_template", jinja);
  for (const gguf::TensorInfo& t : (*in)->tensors()) {
    w.add_tensor_ref(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
  }
  const std::string path = test::write_temp_file("templated.gguf", "");
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

/// Collects warnings while alive.
struct WarningCatcher {
  std::vector<std::string> lines;
  WarningCatcher() {
    set_log_sink([this](LogLevel level, const std::string& m) {
      if (level == LogLevel::Warn) lines.push_back(m);
    });
  }
  ~WarningCatcher() { set_log_sink({}); }
};

TEST(ChatTemplateForModel, ReadsTheFilesTemplate) {
  TESSERA_REQUIRE_SHARED(source, "models/stories260K.gguf");
  const std::string llama3 =
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
      "trim + '<|eot_id|>' %}{{ content }}{% endfor %}";
  const std::string path = with_template(source, llama3);
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  WarningCatcher warnings;
  Result<ChatTemplate> t = ChatTemplate::for_model(**m);
  ASSERT_TRUE(t.is_ok());
  EXPECT_TRUE(t->is_jinja());
  EXPECT_EQ(t->name(), "llama3");  // the family it resembles: its end marker
  EXPECT_EQ(t->end_marker(), "<|eot_id|>");
  EXPECT_TRUE(warnings.lines.empty());
  // The file's own text is what renders (this one has no generation prompt).
  const std::vector<ChatMessage> m1 = {{"user", "  Hi  "}};
  EXPECT_EQ(*t->format(m1, true), "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  Result<ChatTemplate> named = ChatTemplate::for_model(**m, "gemma");
  ASSERT_TRUE(named.is_ok());
  EXPECT_EQ(named->name(), "gemma");
  EXPECT_FALSE(ChatTemplate::for_model(**m, "nope").is_ok());
  std::remove(path.c_str());
}

TEST(ChatTemplateForModel, ZephyrTakesTheModelsEosText) {
  TESSERA_REQUIRE_SHARED(source, "models/stories260K.gguf");
  const std::string path = with_template(
      source,
      "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
      "message['content'] + eos_token }}\n{% endif %}{% if loop.last and add_generation_prompt "
      "%}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}");
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  Result<ChatTemplate> t = ChatTemplate::for_model(**m);
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->name(), "zephyr");
  EXPECT_EQ(t->eos_text(), (*m)->tokenizer()->token_text((*m)->tokenizer()->eos()));
  EXPECT_EQ(t->end_marker(), "</s>");
  std::remove(path.c_str());
}

TEST(ChatTemplateForModel, TemplatesOfNoFamilyRenderAndAbsentOnesFallBackToChatml) {
  TESSERA_REQUIRE_SHARED(source, "models/stories260K.gguf");
  const std::string path = with_template(source, "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
  Result<std::unique_ptr<Model>> unknown = Model::load(path);
  Result<std::unique_ptr<Model>> absent = Model::load(source);
  ASSERT_TRUE(unknown.is_ok() && absent.is_ok());
  WarningCatcher warnings;
  Result<ChatTemplate> a = ChatTemplate::for_model(**unknown);
  Result<ChatTemplate> b = ChatTemplate::for_model(**absent);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->name(), "jinja");
  const std::vector<ChatMessage> m = {{"user", "Hi"}};
  EXPECT_EQ(*a->format(m, true), "user: Hi\n");
  EXPECT_EQ(b->name(), "chatml");
  EXPECT_FALSE(b->is_jinja());
  ASSERT_EQ(warnings.lines.size(), 1u);
  EXPECT_NE(warnings.lines[0].find("has no chat template"), std::string::npos) << warnings.lines[0];
  std::remove(path.c_str());
}

TEST(ChatTemplateForModel, ATemplateThatDoesNotParseIsAnErrorNamingTheFile) {
  TESSERA_REQUIRE_SHARED(source, "models/stories260K.gguf");
  const std::string path = with_template(source, "{% for m in messages %}{{ m.role }");
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok());
  Result<ChatTemplate> t = ChatTemplate::for_model(**m);
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("1:"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("--chat-template"), std::string::npos) << t.status().message();
  // A family by name still works for such a file.
  EXPECT_TRUE(ChatTemplate::for_model(**m, "chatml").is_ok());
  std::remove(path.c_str());
}

TEST(ChatTemplateForModel, NoDoubleBos) {
  TESSERA_REQUIRE_SHARED(source, "models/stories260K.gguf");
  const std::string path =
      with_template(source, "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}");
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok());
  const Tokenizer& tok = *(*m)->tokenizer();
  ASSERT_TRUE(tok.add_bos_token());
  Result<ChatTemplate> t = ChatTemplate::for_model(**m);
  ASSERT_TRUE(t.is_ok());
  const std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  const std::string text = *t->format(msgs, true);
  EXPECT_EQ(text, "[user]Hi");  // the template's "<s>" is the tokenizer's BOS
  const std::vector<TokenId> ids = tok.encode(text, true, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], tok.bos());
  EXPECT_NE(ids.size() > 1 ? ids[1] : -1, tok.bos());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera
