// The reference quantizers must round exactly where the reference quantizer of the
// ecosystem does, or their blocks stop being bit-identical to its files: no fused
// multiply-add contraction, whatever the build flags (-march=native makes FMA available
// and compilers may then contract a * b + c; measured with contraction: up to 30% of the
// k-quant blocks change). Include this header last in each src/quant .cpp file. (clang
// honours the pragma unless the build forces -ffp-contract=fast.)
#pragma once

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
