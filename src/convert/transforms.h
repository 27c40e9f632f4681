// The rearrangements the reference converter applies to a checkpoint tensor's values on
// the way to GGUF (TensorPlan::transform), on the values as floats in the checkpoint's
// row-major order.
#pragma once

#include <vector>

#include "convert/hf_arch.h"
#include "tessera/status.h"

namespace tessera::convert {

/// The shape (innermost first) each of p's sources must have in the checkpoint: p.shape
/// less the expert dimension of a stacked tensor, with the rows of all p.parts of a fused
/// source, transposed for Transform::Transpose.
std::vector<int64_t> source_ne(const TensorPlan& p);

/// `values` (the plan's sources, stacked) cut to block p.part of p.parts and rearranged by
/// p.transform into GGUF's order.
Status apply_transform(const TensorPlan& p, std::vector<float>& values);

}  // namespace tessera::convert
