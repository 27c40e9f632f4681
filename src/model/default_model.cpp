#include "model/default_model.h"

// TESSERA_HAS_DEFAULT_MODEL is defined (for this file only) when CMake assembles the
// model into the library, between these two symbols.
#ifdef TESSERA_HAS_DEFAULT_MODEL
extern "C" const uint8_t tessera_default_model_begin[];
extern "C" const uint8_t tessera_default_model_end[];
#endif

namespace tessera {

std::span<const uint8_t> default_model_bytes() {
#ifdef TESSERA_HAS_DEFAULT_MODEL
  return {tessera_default_model_begin, tessera_default_model_end};
#else
  return {};
#endif
}

}  // namespace tessera
