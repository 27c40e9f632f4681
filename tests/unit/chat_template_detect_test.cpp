// Chat template detection from the Jinja text that GGUF files carry in
// tokenizer.chat_template: the templates of published models (tokenizer_config.json),
// escaped as C strings.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tessera/chat.h"

namespace tessera {
namespace {

std::string detected(const std::string& jinja) {
  const std::optional<ChatTemplate> t = ChatTemplate::detect(jinja);
  return t ? std::string(t->name()) : "(none)";
}

TEST(ChatTemplateDetect, ChatmlAndPhi) {
  // teknium/OpenHermes-2.5-Mistral-7B
  EXPECT_EQ(detected("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                     "message['content'] + "
                     "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
                     "'<|im_start|>assistant\\n' }}{% endif %}"),
            "chatml");
  // microsoft/phi-4
  EXPECT_EQ(detected("{% for message in messages %}{% if (message['role'] == 'system') "
                     "%}{{'<|im_start|>system<|im_sep|>' + "
                     "message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') "
                     "%}{{'<|im_start|>user<|im_sep|>' + "
                     "message['content'] + '<|im_end|><|im_start|>assistant<|im_sep|>'}}{% elif "
                     "(message['role'] == 'assistant') "
                     "%}{{message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}"),
            "phi4");
  // microsoft/Phi-3-mini-4k-instruct
  EXPECT_EQ(detected("{{ bos_token }}{% for message in messages %}{% if (message['role'] == "
                     "'user') %}{{'<|user|>' + '\n' + "
                     "message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif "
                     "(message['role'] == 'assistant') "
                     "%}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}"),
            "phi3");
  // microsoft/Phi-3-small-8k-instruct
  EXPECT_EQ(detected("{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' "
                     "+ '\n' + message['content'] + "
                     "'<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' "
                     "}}{% else %}{{ eos_token }}{% endif %}"),
            "phi3");
}

TEST(ChatTemplateDetect, Llama2Variants) {
  // mistralai/Mistral-7B-Instruct-v0.2 (the first template, without a system message)
  EXPECT_EQ(detected("{{ bos_token }}{% for message in messages %}{% if (message['role'] == "
                     "'user') != (loop.index0 % 2 == 0) "
                     "%}{{ raise_exception('Conversation roles must alternate "
                     "user/assistant/user/assistant/...') }}{% endif %}"
                     "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' "
                     "[/INST]' }}{% elif message['role'] "
                     "== 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ "
                     "raise_exception('Only user and assistant "
                     "roles are supported!') }}{% endif %}{% endfor %}"),
            "llama2");
  // TheBloke/FusionNet_34Bx2_MoE-AWQ
  EXPECT_EQ(detected("{%- for idx in range(0, messages|length) -%}\n{%- if messages[idx]['role'] "
                     "== 'user' -%}\n{%- if idx > 1 "
                     "-%}\n{{- bos_token + '[INST] ' + messages[idx]['content'] + ' [/INST]' "
                     "-}}\n{%- else -%}\n{{- "
                     "messages[idx]['content'] + ' [/INST]' -}}\n{%- endif -%}\n{% elif "
                     "messages[idx]['role'] == 'system' %}\n{{- "
                     "'[INST] <<SYS>>\\n' + messages[idx]['content'] + '\\n<</SYS>>\\n\\n' "
                     "-}}\n{%- elif messages[idx]['role'] == "
                     "'assistant' -%}\n{{- ' '  + messages[idx]['content'] + ' ' + eos_token "
                     "-}}\n{% endif %}\n{% endfor %}"),
            "llama2-sys-bos");
  // meta-llama/Llama-2-7b-chat-hf
  EXPECT_EQ(detected("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] "
                     "%}{% set system_message = "
                     "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set "
                     "system_message = false %}"
                     "{% endif %}{% for message in loop_messages %}{% if (message['role'] == "
                     "'user') != (loop.index0 % 2 == 0) "
                     "%}{{ raise_exception('Conversation roles must alternate "
                     "user/assistant/user/assistant/...') }}{% endif %}"
                     "{% if loop.index0 == 0 and system_message != false %}{% set content = "
                     "'<<SYS>>\\n' + system_message + "
                     "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
                     "message['content'] %}{% endif %}"
                     "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() "
                     "+ ' [/INST]' }}{% elif "
                     "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token "
                     "}}{% endif %}{% endfor %}"),
            "llama2-sys-strip");
}

TEST(ChatTemplateDetect, MistralVersions) {
  // mistralai/Mistral-7B-Instruct-v0.2 (the later 'v1' template with a system message)
  EXPECT_EQ(detected("{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = "
                     "messages[0]['content'] %}\n    "
                     "{%- set loop_messages = messages[1:] %}\n{%- else %}\n    {%- set "
                     "loop_messages = messages %}\n{%- endif "
                     "%}\n\n{{- bos_token }}\n{%- for message in loop_messages %}\n    {%- if "
                     "message['role'] == 'user' %}\n"
                     "        {%- if loop.first and system_message is defined %}\n            {{- "
                     "' [INST] ' + system_message + "
                     "'\\n\\n' + message['content'] + ' [/INST]' }}\n        {%- else %}\n         "
                     "   {{- ' [INST] ' + "
                     "message['content'] + ' [/INST]' }}\n        {%- endif %}\n    {%- elif "
                     "message['role'] == 'assistant' "
                     "%}\n        {{- ' ' + message['content'] + eos_token}}\n    {%- endif "
                     "%}\n{%- endfor %}\n"),
            "mistral-v1");
  // mistralai/Mistral-Large-Instruct-2407 ('v3'; the user-message part of its loop)
  EXPECT_EQ(detected("{%- for message in loop_messages %}\n    {%- if message[\"role\"] == "
                     "\"user\" %}\n        {%- if tools "
                     "is not none and (message == user_messages[-1]) %}\n            {{- "
                     "\"[AVAILABLE_TOOLS] [\" }}\n"
                     "            {{- \"[/AVAILABLE_TOOLS]\" }}\n            {%- endif %}\n        "
                     "{%- if loop.last and "
                     "system_message is defined %}\n            {{- \"[INST] \" + system_message + "
                     "\"\\n\\n\" + "
                     "message[\"content\"] + \"[/INST]\" }}\n        {%- else %}\n            {{- "
                     "\"[INST] \" + "
                     "message[\"content\"] + \"[/INST]\" }}\n        {%- endif %}\n    {%- elif "
                     "message[\"role\"] == "
                     "\"assistant\" %}\n        {{- \" \" + message[\"content\"]|trim + "
                     "eos_token}}\n    {%- endif %}\n{%- endfor %}\n"),
            "mistral-v3");
  // mistralai/Mistral-Nemo-Instruct-2407 ('v3-tekken'; the user-message part of its loop)
  EXPECT_EQ(detected("{%- for message in loop_messages %}\n    {%- if message[\"role\"] == "
                     "\"user\" %}\n        {%- if tools "
                     "is not none and (message == user_messages[-1]) %}\n            {{- "
                     "\"[AVAILABLE_TOOLS][\" }}\n"
                     "            {{- \"[/AVAILABLE_TOOLS]\" }}\n            {%- endif %}\n        "
                     "{%- if loop.last and "
                     "system_message is defined %}\n            {{- \"[INST]\" + system_message + "
                     "\"\\n\\n\" + "
                     "message[\"content\"] + \"[/INST]\" }}\n        {%- else %}\n            {{- "
                     "\"[INST]\" + "
                     "message[\"content\"] + \"[/INST]\" }}\n        {%- endif %}\n    {%- elif "
                     "message[\"role\"] == "
                     "\"assistant\" %}\n        {{- message[\"content\"] + eos_token}}\n    {%- "
                     "endif %}\n{%- endfor %}\n"),
            "mistral-v3-tekken");
  // mistralai/Mistral-Large-Instruct-2411 ('v7')
  EXPECT_EQ(detected("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' "
                     "%}{{ '[INST] ' + "
                     "message['content'] + '[/INST]' }}{% elif message['role'] == 'system' %}{{ "
                     "'[SYSTEM_PROMPT] ' + "
                     "message['content'] + '[/SYSTEM_PROMPT]' }}{% elif message['role'] == "
                     "'assistant' %}{{ ' ' + "
                     "message['content'] + eos_token }}{% else %}{{ raise_exception('Only user, "
                     "system and assistant roles are "
                     "supported!') }}{% endif %}{% endfor %}"),
            "mistral-v7");
}

TEST(ChatTemplateDetect, OtherFamilies) {
  // meta-llama/Meta-Llama-3-8B-Instruct
  EXPECT_EQ(
      detected(
          "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
          "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
          "trim + "
          "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif "
          "%}{{ content }}"
          "{% endfor %}{% if add_generation_prompt %}{{ "
          "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"),
      "llama3");
  // google/gemma-7b-it
  EXPECT_EQ(detected("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
                     "supported') }}{% endif %}"
                     "{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set "
                     "role = 'model' %}{% else %}"
                     "{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + "
                     "'\\n' + message['content'] | trim "
                     "+ '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt "
                     "%}{{'<start_of_turn>model\\n'}}{% endif %}"),
            "gemma");
  // HuggingFaceH4/zephyr-7b-beta (also TinyLlama-1.1B-Chat)
  EXPECT_EQ(detected("{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ "
                     "'<|user|>\n' + message['content'] "
                     "+ eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + "
                     "message['content'] + eos_token "
                     "}}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + "
                     "message['content'] + eos_token }}\n"
                     "{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ "
                     "'<|assistant|>' }}\n{% endif %}\n{% endfor %}"),
            "zephyr");
  // CohereForAI/c4ai-command-r-plus (abridged: its turn markup)
  EXPECT_EQ(detected("{% if system_message != false %}{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' "
                     "+ system_message + "
                     "'<|END_OF_TURN_TOKEN|>' }}{% endif %}{% for message in loop_messages %}{% "
                     "set content = message['content'] "
                     "%}{% if message['role'] == 'user' %}{{ "
                     "'<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content.strip() + "
                     "'<|END_OF_TURN_TOKEN|>' }}{% elif message['role'] == 'assistant' %}{{ "
                     "'<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content.strip() + "
                     "'<|END_OF_TURN_TOKEN|>' }}{% endif %}"
                     "{% endfor %}{% if add_generation_prompt %}{{ "
                     "'<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}"),
            "command-r");
  // deepseek-ai/deepseek-coder-33b-instruct (abridged: the message loop)
  EXPECT_EQ(
      detected(
          "{%- for message in messages %}\n    {%- if message['role'] == 'system' %}\n{{ "
          "message['content'] }}\n"
          "    {%- else %}\n        {%- if message['role'] == 'user' %}\n{{'### Instruction:\\n' + "
          "message['content'] + '\\n'}}\n        {%- else %}\n{{'### Response:\\n' + "
          "message['content'] + "
          "'\\n<|EOT|>\\n'}}\n        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n{% if "
          "add_generation_prompt %}\n"
          "{{'### Response:'}}\n{% endif %}"),
      "deepseek");
  // deepseek-ai/DeepSeek-V2-Chat
  EXPECT_EQ(
      detected(
          "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% "
          "endif %}"
          "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: "
          "' + "
          "message['content'] + '\n\n' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' "
          "+ "
          "message['content'] + eos_token }}{% elif message['role'] == 'system' %}{{ "
          "message['content'] + '\n\n' }}"
          "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"),
      "deepseek2");
  // ibm-granite/granite-3.0-8b-instruct (abridged: the message loop)
  EXPECT_EQ(
      detected("{%- for message in messages %}\n    {%- if message['role'] == 'system' %}\n    {{- "
               "'<|start_of_role|>system<|end_of_role|>' + message['content'] + "
               "'<|end_of_text|>\n' }}\n    {%- elif "
               "message['role'] == 'user' %}\n    {{- '<|start_of_role|>user<|end_of_role|>' + "
               "message['content'] + "
               "'<|end_of_text|>\n' }}\n    {%- endif %}\n{%- endfor %}"),
      "granite");
  // openchat/openchat-3.5-0106
  EXPECT_EQ(detected("{{ bos_token }}{% for message in messages %}{{ 'GPT4 Correct ' + "
                     "message['role'].title() + ': ' + "
                     "message['content'] + '<|end_of_turn|>'}}{% endfor %}{% if "
                     "add_generation_prompt %}{{ 'GPT4 Correct "
                     "Assistant:' }}{% endif %}"),
            "openchat");
  // Vicuna and Orca-Vicuna publish no template; these are the community ones llama.cpp matches.
  EXPECT_EQ(detected("{%- for message in messages %}{%- if message['role'] == 'system' -%}{{- '' + "
                     "message['content'] + "
                     "'\n\n' -}}{%- else -%}{%- if message['role'] == 'user' -%}{{-'USER: ' + "
                     "message['content'] + '\n'-}}{%- else "
                     "-%}{{-'ASSISTANT: ' + message['content'] + '</s>\n' -}}{%- endif -%}{%- "
                     "endif -%}{%- endfor -%}{%- if "
                     "add_generation_prompt -%}{{-'ASSISTANT:'-}}{%- endif -%}"),
            "vicuna");
  EXPECT_EQ(detected("{%- for message in messages %}{%- if message['role'] == 'system' "
                     "-%}{{-'SYSTEM: ' + message['content'] "
                     "+ '\n' -}}{%- else -%}{%- if message['role'] == 'user' -%}{{-'USER: ' + "
                     "message['content'] + '\n'-}}{%- "
                     "else -%}{{-'ASSISTANT: ' + message['content'] + '</s>\n' -}}{%- endif -%}{%- "
                     "endif -%}{%- endfor -%}{%- if "
                     "add_generation_prompt -%}{{-'ASSISTANT:'-}}{%- endif -%}"),
            "vicuna-orca");
}

TEST(ChatTemplateDetect, NamesAndUnknownTexts) {
  EXPECT_EQ(detected("gemma"), "gemma");
  EXPECT_EQ(detected("mistral-v7-tekken"), "mistral-v7-tekken");
  EXPECT_EQ(detected("INVALID TEMPLATE"), "(none)");
  EXPECT_EQ(detected("{% for message in messages %}{{ message['content'] }}{% endfor %}"),
            "(none)");
  EXPECT_EQ(detected(""), "(none)");
}

}  // namespace
}  // namespace tessera
