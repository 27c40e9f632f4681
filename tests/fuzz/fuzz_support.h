// What the fuzz harnesses (tests/fuzz/fuzz_*.cpp) and their seed generator share: quiet
// logging, the tiny model the state and adapter harnesses run, the vocabularies of
// ../shared, temporary files. docs/robustness.md: how to run them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/synth.h"
#include "tessera/tokenizer.h"

namespace tessera::fuzz {

/// Drops the library's warnings: a bad input is expected at every execution.
void quiet();

/// The tiny llama (2 layers, n_embd 32, 64 token ids, F32) of the state and adapter
/// harnesses; the seed generator writes its seeds against the same model.
SynthParams tiny_model_params();
/// Its GGUF bytes (made once per process).
const std::vector<uint8_t>& tiny_model_bytes();
/// A context for it: 64 cells, one thread.
ContextParams tiny_context_params();

/// The reference data folder: $TESSERA_SHARED, or ../shared beside the checkout.
std::string shared_dir();
/// The tokenizers of ../shared/vocab/*.gguf (sorted by name), then the default model's;
/// those whose files are absent are left out.
const std::vector<std::unique_ptr<Tokenizer>>& tokenizers();

/// A path in the temporary folder unique to this process and `stem`, removed at exit.
const std::string& temp_path(const std::string& stem);
void write_file(const std::string& path, const uint8_t* data, size_t size);
std::vector<uint8_t> read_file(const std::string& path);

/// Raised when a harness's own invariant fails (a property of the code under test), as a
/// crash the fuzzer reports with its input.
[[noreturn]] void property_failed(const char* what);

}  // namespace tessera::fuzz
