// Row conversions of every type to and from float: the plain types (f32, f16, bf16, the
// integers) and the quantized formats' reference code (quant.h). They live here, in the
// formats layer, not in core's type table (core/dtype.cpp), so that core needs nothing
// above it: core knows a type's layout, the formats know its numbers.
#pragma once

#include "tessera/dtype.h"

namespace tessera::quant {

/// The conversion of a row of `type` to float, or null where tessera has none (the
/// repacked layouts, which only the CPU kernels read).
ToFloatFn to_float_fn(DType type);
/// The conversion of floats to a row of `type`, or null where tessera cannot write it.
FromFloatFn from_float_fn(DType type);

}  // namespace tessera::quant
