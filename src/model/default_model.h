// The default model's bytes, built into the library by CMake (an assembler .incbin of
// models/<kDefaultModelFile> when that file is in the tree; see CMakeLists.txt): run,
// chat and serve use it when no -m is given, from any directory, with nothing installed
// beside the binary. Built in rather than looked up on disk so that a fresh build talks
// out of the box and cannot pick up a stale or foreign file.
#pragma once

#include <cstdint>
#include <span>

namespace tessera {

/// The file name of the default model (under models/).
inline constexpr const char* kDefaultModelFile = "tessera-kjv-6m-q8_0.gguf";

/// The built-in GGUF image, or empty when the build has none.
std::span<const uint8_t> default_model_bytes();

}  // namespace tessera
