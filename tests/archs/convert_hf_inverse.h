// The inverse of the reference converter's value transforms, on a GGUF tensor's bytes: what
// the checkpoint held before convert_hf_to_gguf.py rearranged it (tests of `tessera
// convert`). Row r of a 2-D tensor is its r-th ne[0]-element row; a 1-D tensor's rows are
// its elements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/gguf.h"

namespace tessera::test {

/// LLaMA's q/k rows un-permuted: GGUF row h·hr + 2i + j back to HF row h·hr + j·hr/2 + i.
std::vector<uint8_t> unpermute_rope(const gguf::TensorInfo& t, int64_t heads);

/// GPT-NeoX's and BLOOM's fused qkv back to per-head [q | k | v] rows.
std::vector<uint8_t> qkv_to_per_head(const gguf::TensorInfo& t, int64_t heads);

/// Falcon's fused qkv back to per-group [its q heads | k | v] rows.
std::vector<uint8_t> qkv_to_groups(const gguf::TensorInfo& t, int64_t heads, int64_t groups);

/// GPT-2's Conv1D weight: GGUF's [out][in] back to [in][out].
std::vector<uint8_t> transposed(const gguf::TensorInfo& t);

/// `model` with its feed-forward size raised to `n_ff` (feed_forward_length and the
/// ffn_up/ffn_gate rows and ffn_down columns, the new ones repeating the first), written to
/// `path`: for shared files whose FFN size the HF configuration of their architecture cannot
/// express (BLOOM's is always 4·n_embd, Refact's computed from n_embd).
void write_with_ffn(const gguf::File& model, int64_t n_ff, const std::string& path);

/// `model` (a Falcon-7B-style file) with the second norm of Falcon-40B's blocks added
/// (blk.N.attn_norm_2: attn_norm's values in reverse order, so that the two differ), written
/// to `path`.
void write_with_second_norm(const gguf::File& model, const std::string& path);

/// `model` with output.weight replaced by a copy of token_embd.weight, written to `path`:
/// what the reference makes of a GPT-2 or BLOOM checkpoint without lm_head.weight.
void write_with_output_copy(const gguf::File& model, const std::string& path);

}  // namespace tessera::test
