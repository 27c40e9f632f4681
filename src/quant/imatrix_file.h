// Importance matrices: for each weight matrix, the mean over a calibration text of the
// square of every input column's activation (what `tessera imatrix` measures and what the
// quantizers' weighted searches use). Stored in the reference engine's file format
// (llama.cpp's `llama-imatrix` before its GGUF variant), so files move between the engines
// both ways; all integers little-endian int32:
//
//   n_entries
//   n_entries x { name_len, name (no terminator), ncall, nval, nval float32 values }
//   chunks, dataset_len, dataset (optional trailer: both engines write it)
//
// A value as stored is (sum of x^2 over the rows that reached the matrix / rows) * ncall,
// where ncall counts the evaluations that fed it; readers divide by ncall. For a stack of
// experts (a mixture-of-experts matrix, n_expert x [n_out, n_in]) an entry holds
// n_expert * n_in values, expert by expert, each expert's mean over its own rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::quant {

struct ImatrixEntry {
  std::string name;           // the weight's tensor name, e.g. blk.0.attn_q.weight
  int32_t ncall = 0;          // evaluations that contributed
  std::vector<float> values;  // as stored (see above)

  /// The importance of each column: values / ncall (values as is when ncall is 0).
  std::vector<float> importance() const;
};

struct Imatrix {
  std::vector<ImatrixEntry> entries;
  int32_t chunks = 0;   // chunks of the calibration text evaluated
  std::string dataset;  // the calibration file's name

  /// The entry of a tensor, or null.
  const ImatrixEntry* find(const std::string& name) const;
};

/// Reads a file; a malformed one (truncated, negative or absurd counts, a value count
/// that is zero) is refused with the entry and byte offset that is wrong.
Result<Imatrix> read_imatrix(const std::string& path);
/// Writes `m` (entries in their order), atomically: a failure leaves no file.
Status write_imatrix(const std::string& path, const Imatrix& m);

}  // namespace tessera::quant
