// Which type each tensor of a model gets when the model is quantized to a target.
//
// A target (a "recipe") names a base type for the weight matrices and, for the k-quant
// mixes, rules that give some tensors more bits. The rules are the default recipes of
// the GGUF ecosystem's reference quantizer (llama.cpp's `llama-quantize` without an
// importance matrix), so a file quantized here has the same per-tensor types as one made
// there; `general.file_type` gets that tool's file-type number.
//
// The table, for a LLaMA-style model (n = layers, i = layer index, "more bits" layers are
// i < n/8, i >= 7n/8 and every third layer in between; gqa = n_head / n_head_kv):
//
//   target  | base | output | attn_v                   | ffn_down              | attn_output
//   --------+------+--------+--------------------------+-----------------------+------------
//   Q4_0 Q4_1 Q5_0 Q5_1 | own | Q6_K | base           | base                  | base
//   Q8_0    | Q8_0 | Q8_0   | base                     | base                  | base
//   Q2_K    | Q2_K | Q6_K   | Q4_K if gqa >= 4 else Q3_K | Q3_K                | Q3_K
//   Q2_K_S  | Q2_K | Q6_K   | Q4_K if gqa >= 4         | Q4_K for i < n/8      | base
//   Q3_K_S  | Q3_K | Q6_K   | base                     | base                  | base
//   Q3_K_M  | Q3_K | Q6_K   | Q5_K first 2, then Q4_K  | Q5_K i < n/16, Q4_K   | Q4_K
//   Q3_K_L  | Q3_K | Q6_K   | Q5_K                     | Q5_K                  | Q5_K
//   Q4_K_S  | Q4_K | Q6_K   | Q5_K for the first 4     | Q5_K for i < n/8      | base
//   Q4_K_M  | Q4_K | Q6_K   | Q6_K in more-bits layers | Q6_K more-bits layers | base
//   Q5_K_S  | Q5_K | Q6_K   | base                     | base                  | base
//   Q5_K_M  | Q5_K | Q6_K   | Q6_K in more-bits layers | Q6_K more-bits layers | base
//   Q6_K    | Q6_K | Q6_K   | base                     | base                  | base
//   F32 F16 BF16 | own | own | own                     | own                   | own
//
// The i-quant and ternary targets (base: IQ2_S -> IQ2_XS, IQ2_M -> IQ2_S, IQ3_XS and
// IQ3_M -> IQ3_S, else the type of the same name; "imat" = with an importance matrix):
//
//   target          | output | token_embd | attn_v               | others
//   ----------------+--------+------------+----------------------+---------------------------------
//   IQ2_XXS IQ2_XS  | Q5_K   | Q2_K       | Q4_K if gqa >= 4 or  | ffn_down Q2_K for i < n/8
//   IQ1_S IQ1_M     |        |            | experts >= 4, Q2_K   | (IQ1_*: attn_output IQ2_XXS)
//   IQ2_S IQ2_M     | Q5_K   | IQ3_S      | as above, else IQ3_S | ffn_down i < n/8, attn_output IQ3_S
//   IQ3_XXS         | Q5_K   | IQ3_S      | Q4_K if gqa >= 4,    | attn_q/attn_k IQ2_S, attn_output
//                   |        |            | IQ3_XXS (imat)/IQ3_S | IQ3_S; no imat: ffn_down Q4_K/Q3_K
//   IQ3_XS          | Q6_K   | base       | Q4_K if gqa >= 4     | attn_q/k IQ3_XXS, middle ffn_gate/up IQ3_XXS
//   IQ3_S           | Q6_K   | base       | Q4_K if gqa >= 4     | base
//   IQ3_M           | Q6_K   | base       | Q4_K                 | attn_output Q4_K, ffn_down Q4_K i < n/8
//   IQ4_NL IQ4_XS   | Q6_K   | base       | Q5_K if gqa >= 4     | no imat: ffn_down Q5_K for i < n/8
//   TQ1_0 TQ2_0     | Q6_K   | Q4_K       | base                 | base
//
// With an importance matrix, Q4_0 and Q5_0 give ffn_down of layers i < n/8 Q4_1 / Q5_1.
// Targets refused without an importance matrix (QuantRecipe::needs_imatrix, the
// reference's list): IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, Q2_K_S; tensor_needs_imatrix
// says which single tensors need an entry.
//
// Aliases: Q3_K = Q3_K_M, Q4_K = Q4_K_M, Q5_K = Q5_K_M. Also: the token embedding gets
// the base type (the output's type when the model has no output.weight: tied weights);
// a fused attn_qkv gets Q4_K (Q3_K_M/L), Q5_K (Q4_K_M), Q6_K (Q5_K_M); the output gets
// Q8_0 when its rows do not fit the base type's blocks; 70B-class LLaMAs raise a Q3_K/Q4_K
// attn_v to Q5_K; 8-expert models get Q8_0 attn_k/attn_v and (k-quant mixes) a Q5_K
// attn_output; Falcon has its own ffn_down/attn_output/output rules.
//
// Only weight matrices are quantized: 1-D tensors (norms, biases) and a few special
// matrices (MoE routers, position embeddings, ...) keep their type. A matrix whose row
// length is not a multiple of the chosen type's block size falls back as the reference
// falls back: Q2_K/Q3_K and the 256-block i-quants -> IQ4_NL (Q4_0 where this build
// cannot write IQ4_NL), TQ1_0/TQ2_0 -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and
// to F16 when even 32 does not divide it.
// With `pure`, every matrix gets the base type (fallbacks still apply).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/gguf.h"

namespace tessera {

/// llama.cpp's file-type numbers (the `general.file_type` key) of the recipes offered.
enum class FileType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q2_K = 10,
  Q3_K_S = 11,
  Q3_K_M = 12,
  Q3_K_L = 13,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ2_XXS = 19,
  IQ2_XS = 20,
  Q2_K_S = 21,
  IQ3_XS = 22,
  IQ3_XXS = 23,
  IQ1_S = 24,
  IQ4_NL = 25,
  IQ3_S = 26,
  IQ3_M = 27,
  IQ2_S = 28,
  IQ2_M = 29,
  IQ4_XS = 30,
  IQ1_M = 31,
  BF16 = 32,
  TQ1_0 = 36,
  TQ2_0 = 37,
};

/// A quantization target.
struct QuantRecipe {
  std::string_view name;     // as the user types it: "Q4_K_M"; aliases have their own entry
  FileType file_type;        // written to general.file_type
  DType base;                // the type of most weight matrices
  std::string_view summary;  // one line for help texts
  /// Bits per weight of the whole mix as the reference's quantizer states it (its i-quant
  /// and ternary targets); 0 where it states none: then recipe_bpw uses the base type's.
  double mix_bpw = 0;
  /// Refused without an importance matrix (the reference's list: the result would be
  /// garbage). Single tensors of other targets may need one too: Format::needs_importance.
  bool needs_imatrix = false;
};

/// Every recipe, aliases included, in the order help texts list them.
std::span<const QuantRecipe> quant_recipes();
/// The recipe called `name` (case-insensitive), or nullptr.
const QuantRecipe* find_quant_recipe(std::string_view name);
/// Bits per weight: the reference's figure for the mix (mix_bpw) where it states one, else
/// the base type's blocks' (8 * bytes per block / elements per block).
double recipe_bpw(const QuantRecipe& r);
/// The canonical name of a file type ("Q4_K_M" for 15), or "" when not offered here.
std::string_view file_type_name(FileType ft);

/// What the rules need to know about the model.
struct QuantModelFacts {
  std::string arch;      // general.architecture
  int64_t n_layer = 0;   // <arch>.block_count
  int64_t n_gqa = 1;     // n_head / n_head_kv
  int64_t n_expert = 0;  // <arch>.expert_count
  bool is_70b = false;   // a LLaMA with 80 layers and grouped-query attention
  bool falcon = false;   // the architecture takes the reference's Falcon mixes (Arch::quant)
};
/// Reads the facts from a file's metadata (missing keys leave the defaults).
QuantModelFacts quant_model_facts(const gguf::File& file);

/// One tensor as the planner sees it.
struct TensorDesc {
  std::string_view name;
  DType type;  // its type in the input
  int n_dims;
  int64_t row_size;  // ne[0], elements per row
};

/// The planned output type of one tensor.
struct TensorPlan {
  DType type;
  bool quantizable;  // false: kept as it is in the input (norms, routers, ...)
  std::string note;  // set when a fallback replaced the recipe's type, says why
};

/// True for the tensors a recipe may change: weight matrices other than norms, routers
/// and a few special matrices.
bool is_quantizable(std::string_view name, int n_dims);

/// The plan of every tensor, in the order given. The result does not depend on the order
/// of `tensors` (layer-counting rules count in layer order, as the reference does).
/// `has_imatrix`: an importance matrix will be used (some i-quant and legacy mixes differ).
std::vector<TensorPlan> plan_quantization(const QuantRecipe& recipe, const QuantModelFacts& facts,
                                          std::span<const TensorDesc> tensors, bool pure = false,
                                          bool has_imatrix = false);

/// Whether the reference refuses to write tensor `name` as `type` in a file of `ft`
/// without an importance matrix entry for it (the lowest-bit types; Q2_K in Q2_K_S).
bool tensor_needs_imatrix(FileType ft, DType type, std::string_view name);

}  // namespace tessera
