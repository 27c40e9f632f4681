// The MPI commands about models (backend/mpi/message.h): rank 0 encodes them when it
// loads or frees a model; the other ranks (runtime/mpi_worker.cpp) decode them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/mpi/message.h"
#include "tessera/model.h"

namespace tessera {

/// LoadModel: the model's id, its path (empty: the built-in default model), its params.
std::vector<uint8_t> encode_load_command(int id, const std::string& path, const ModelParams& params);
struct LoadCommand {
  int id = 0;
  std::string path;
  ModelParams params;
};
/// Reads a LoadModel command after its kind byte.
LoadCommand decode_load_command(mpi::MessageReader& r);

/// FreeModel: the model's id.
std::vector<uint8_t> encode_free_model_command(int id);

}  // namespace tessera
