// <immintrin.h> for the x86 kernel files. GCC 12's intrinsic headers trip -Wuninitialized
// (and -Wmaybe-uninitialized) on their own _mm*_undefined_*() idiom for an undefined upper
// half (GCC bug 105593, fixed in 12.3); the warnings point into the header, so they are
// silenced for the header only, here, once.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
