#include "model/load_command.h"

namespace tessera {

std::vector<uint8_t> encode_load_command(int id, const std::string& path, const ModelParams& params) {
  mpi::MessageWriter w;
  w.put(mpi::Command::LoadModel);
  w.put(int32_t(id));
  w.put_string(path);
  w.put(uint64_t(params.adapters.size()));
  for (const AdapterSpec& a : params.adapters) {
    w.put_string(a.path);
    w.put(a.scale);
  }
  w.put(uint8_t(params.repack));
  w.put_string(params.layers);
  w.put(uint8_t(params.mpi));
  w.put_vector(params.mpi_layers);
  return w.bytes();
}

LoadCommand decode_load_command(mpi::MessageReader& r) {
  LoadCommand c;
  c.id = r.get<int32_t>();
  c.path = r.get_string();
  const uint64_t n_adapters = r.get<uint64_t>();
  for (uint64_t i = 0; i < n_adapters; ++i) {
    AdapterSpec a;
    a.path = r.get_string();
    a.scale = r.get<float>();
    c.params.adapters.push_back(a);
  }
  c.params.repack = r.get<uint8_t>() != 0;
  c.params.layers = r.get_string();
  c.params.mpi = r.get<uint8_t>() != 0;
  c.params.mpi_layers = r.get_vector<int64_t>();
  return c;
}

std::vector<uint8_t> encode_free_model_command(int id) {
  mpi::MessageWriter w;
  w.put(mpi::Command::FreeModel);
  w.put(int32_t(id));
  return w.bytes();
}

}  // namespace tessera
