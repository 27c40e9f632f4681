// The MPI commands about contexts' lifetimes (backend/mpi/message.h), and the other ranks'
// follow() loop (mpi_commands.cpp), which carries out every command rank 0 sends: models
// and contexts made and freed, and the mirrored Context operations (runtime/mirrored_ops.h:
// rank 0's Context sends each operation that changes a context's state before (decode) or
// after (the others, once they succeeded) carrying it out itself, and the loop repeats it
// on its context, so that every rank's KV cells, and so every graph, stay the same).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/mpi/message.h"
#include "tessera/context.h"

namespace tessera {

std::vector<uint8_t> encode_create_context(int model_id, int context_id, const ContextParams& params);
std::vector<uint8_t> encode_free_context(int context_id);

}  // namespace tessera
