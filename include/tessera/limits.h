// The limits on untrusted input, as policy: every parser of a file or a request that a
// stranger may write (GGUF models and adapters, grammars, JSON schemas) refuses input
// past one of these with a Status naming the limit, before it allocates or recurses for
// it. Each value is far above what real inputs use (the reason says how far) and low
// enough that the work it bounds stays small. docs/robustness.md lists them with the
// server's request limits (tools/server/request_limits.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::limits {

// ---- GGUF files (src/gguf/reader.cpp) ------------------------------------------------
// Counts are also checked against the bytes left in the file (each item's smallest
// encoding must fit), and sizes from the file are added and multiplied overflow-checked.

/// Metadata keys in one file: real models have 20 to 60 (the vocabulary is a few arrays).
inline constexpr uint64_t kMaxMetadataKeys = uint64_t{1} << 16;
/// Bytes of a key or tensor name: real names are under 100 bytes.
inline constexpr uint64_t kMaxNameBytes = 65535;
/// Bytes of one string value: the longest real ones are chat templates (tens of KB).
inline constexpr uint64_t kMaxStringBytes = uint64_t{1} << 24;
/// Elements of one array: the longest real ones are vocabularies and merge lists
/// (256 K tokens, under a million merges).
inline constexpr uint64_t kMaxArrayElements = uint64_t{1} << 24;
/// Arrays nested in arrays (an array of scalars has depth 1): real files use 1.
inline constexpr int kMaxArrayDepth = 8;
/// Tensors in one file: the largest real models hold a few thousand.
inline constexpr uint64_t kMaxTensors = uint64_t{1} << 16;
/// Dimensions of a tensor: GGUF's own limit.
inline constexpr uint32_t kMaxTensorDims = 4;
// The tensors' bytes: each tensor lies inside the file, no two overlap, so the total is
// at most the file's size; a tensor's element count and byte size must fit in int64.

// ---- Model hyper-parameters (src/model/hparams.cpp) -----------------------------------

/// Largest size key (context, widths, head counts and size, vocabulary): real models stay
/// under 2^24, and n_embd_q + 2 n_embd_kv (products of two sizes) stays inside int64.
inline constexpr int64_t kMaxModelSize = int64_t{1} << 30;
/// Most layers (block_count): the loader keeps an entry per layer before it looks for
/// their tensors, and every layer has tensors, of which a file holds at most kMaxTensors.
inline constexpr int64_t kMaxLayers = int64_t(kMaxTensors);

// ---- GBNF grammars (src/runtime/grammar/parser.cpp) ----------------------------------

/// Parentheses nested in one rule: the parser recurses once per level.
inline constexpr int kMaxGrammarNesting = 256;
/// The m and n of `x{m,n}`: each unit costs a generated rule or a copy of x.
inline constexpr uint32_t kMaxGrammarRepeat = 10000;
/// Parse stacks alive at one character (src/runtime/grammar/stacks.cpp): real grammars
/// have a few dozen; nested optional repetitions (`("a"?{1,1000}){1,1000}`) could have
/// millions, each costing memory and time at every character. Past it the text is refused.
inline constexpr int kMaxGrammarStacks = 1 << 14;

// ---- JSON schemas (src/runtime/grammar/json_schema*.cpp) -----------------------------

/// Schemas nested inside schemas: the compiler recurses once per level.
inline constexpr int kMaxSchemaDepth = 64;
/// Bracket nesting of a schema's JSON text, checked before parsing it (the JSON parser
/// and its dump recurse per level); a schema level is about two JSON levels.
inline constexpr int kMaxSchemaTextDepth = 512;
/// minLength / maxLength / minItems / maxItems, and a pattern's {m,n}: the grammar's
/// repetition limit.
inline constexpr uint64_t kMaxSchemaCount = kMaxGrammarRepeat;
/// Groups nested in a `pattern`: its parser recurses per level, and its GBNF nests about
/// as deep (within kMaxGrammarNesting).
inline constexpr int kMaxSchemaPatternNesting = 64;
/// Parts a `pattern`'s tree may grow to: repeating an optional part copies what follows
/// it ((a?b?c?...)* grows with the square of its length).
inline constexpr size_t kMaxSchemaPatternParts = 100000;
/// Rules one schema may produce, each bounded repetition unit counted (maxLength 100
/// costs ~100): the grammar's memory and the matcher's expansion time grow with it.
inline constexpr size_t kMaxSchemaRules = 20000;

}  // namespace tessera::limits
