// Speculative decoding's flags (llama.cpp's names and defaults) for `run` and `serve`,
// and the draft model they name, checked against the target's vocabulary.
#include "commands.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {

void add_speculative_options(CLI::App* cmd, SpeculativeOptions& o) {
  CLI::Option* draft =
      cmd->add_option("--model-draft", o.model_draft,
                      "(also -md) draft model for speculative decoding, with the vocabulary of -m: it proposes "
                      "tokens that the model verifies in one batch")
          ->check(CLI::ExistingFile);
  cmd->add_flag("--lookup", o.lookup,
                "speculative decoding without a draft model: tokens are drafted by n-gram lookup (n-grams of 4 "
                "down to 1 tokens) over the prompt and the output so far")
      ->excludes(draft);
  cmd->add_option("--draft-max,--draft,--draft-n", o.params.n_max,
                  "most tokens drafted per step (with -md or --lookup)")
      ->check(NumberRange(1, 256))
      ->capture_default_str();
  cmd->add_option("--draft-min,--draft-n-min", o.params.n_min,
                  "fewest tokens a draft must have to be verified (a shorter one: a plain step)")
      ->check(NumberRange(0, 256))
      ->capture_default_str();
  cmd->add_option("--draft-p-min", o.params.p_min,
                  "the draft model stops drafting after a token it gives less than this probability "
                  "(greedy, among its 10 most likely)")
      ->check(NumberRange(0.0f, 1.0f))
      ->capture_default_str();
}

Result<std::unique_ptr<Model>> load_draft_model(const SpeculativeOptions& o, const Model& target, bool mmap) {
  Result<std::unique_ptr<Model>> draft = load_model_or_default(o.model_draft, ModelParams{}, mmap);
  if (!draft) return Status::error(o.model_draft + ": " + draft.status().message());
  const Tokenizer* td = (*draft)->tokenizer();
  const Tokenizer* tt = target.tokenizer();
  if (!td || !tt) return Status::error(o.model_draft + ": a draft model and its target need a tokenizer");
  if (Status s = check_draft_vocab(*tt, *td); !s) return Status::error(o.model_draft + ": " + s.message());
  return draft;
}

}  // namespace tessera::cli
