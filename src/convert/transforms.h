// The rearrangements the reference converter applies to a checkpoint tensor's values on
// the way to GGUF (TensorPlan::transform), on the values as floats in the checkpoint's
// row-major order.
#pragma once

#include <vector>

#include "convert/hf_arch.h"
#include "tessera/status.h"

namespace tessera::convert {

/// `values` (the plan's sources, stacked) rearranged by p.transform into GGUF's order.
Status apply_transform(const TensorPlan& p, std::vector<float>& values);

}  // namespace tessera::convert
