// The MPI commands about contexts (backend/mpi/message.h): rank 0's Context encodes each
// operation that changes a context's state and sends it to the other ranks before (decode)
// or after (the sequence operations, once they succeeded) carrying it out itself; the
// other ranks' follow() loop (mpi_commands.cpp) decodes and repeats it on their context,
// so that every rank's KV cells, and so every graph, stay the same.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/mpi/message.h"
#include "tessera/batch.h"
#include "tessera/context.h"

namespace tessera {

std::vector<uint8_t> encode_create_context(int model_id, int context_id, const ContextParams& params);
std::vector<uint8_t> encode_free_context(int context_id);
std::vector<uint8_t> encode_decode(int context_id, const Batch& batch);
std::vector<uint8_t> encode_clear(int context_id);
std::vector<uint8_t> encode_adapter_scales(int context_id, const std::vector<float>& scales);
/// SeqRm, SeqCp, SeqCopy, SeqKeep, SeqAdd and ContextShift: the context and the
/// operation's arguments, as integers in the order the Context method takes them.
std::vector<uint8_t> encode_seq_op(mpi::Command op, int context_id, std::vector<int64_t> args);

}  // namespace tessera
