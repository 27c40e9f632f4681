// Where a model's weights live when it runs on several backends: each layer on one
// backend (its weights and its KV cache), the token embedding with the first layer, the
// output norm and projection with the last. Backends are named in the placement
// (`--layers 0-10:a,11-21:b`, each name one CPU backend instance with its own buffers and
// threads) or are the ranks of an MPI job (`--mpi`, rank r holding a contiguous range).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/weights.h"
#include "tessera/status.h"

namespace tessera {

struct Placement {
  std::vector<std::string> backends;  // names, in order of first use; MPI: "rank 0", ...
  std::vector<int> layer;             // the backend of each layer
  int input = 0;                      // token and position embeddings, embedding norm
  int output = 0;                     // output norm and projection
  std::vector<int> gpu;               // per backend: its CUDA device, -1 for a CPU backend
  bool mpi = false;                   // backend r is MPI rank r
  int rank = 0;                       // with mpi: this process's rank

  /// Whether backend b computes in this process.
  bool here(int b) const { return !mpi || b == rank; }
  /// Whether layer il's weights are used in this process.
  bool layer_here(int64_t il) const { return here(layer[size_t(il)]); }
  /// The CUDA device of backend b, -1 when it is a CPU backend (or another rank).
  int gpu_of(int b) const { return size_t(b) < gpu.size() ? gpu[size_t(b)] : -1; }
  /// Whether layer il's weights are read by this process's CPU.
  bool layer_on_cpu_here(int64_t il) const { return layer_here(il) && gpu_of(layer[size_t(il)]) < 0; }
};

/// Everything on one backend.
Placement single_placement(int64_t n_layer);

/// Parses "RANGE:NAME[,RANGE:NAME...]", RANGE a layer "N" or an inclusive "N-M"; layers
/// left out run on the first backend named. Errors name the entry.
Result<Placement> parse_layer_placement(const std::string& spec, int64_t n_layer);

/// llama.cpp's -ngl: the last `n_gpu` layers on CUDA device `device`, the rest on the
/// CPU; the output too when n_gpu > n_layer (so -ngl 99 puts everything there but the
/// token embedding, whose rows are taken on the CPU). n_gpu 0: the CPU alone.
Result<Placement> gpu_placement(int64_t n_layer, int64_t n_gpu, int device);

/// Ranks 0 .. n_ranks-1 holding contiguous layer ranges: `counts` (layers per rank, summing
/// to n_layer) when given, else in proportion to each rank's free memory (`free_bytes`).
Result<Placement> mpi_placement(const std::vector<int64_t>& counts, const std::vector<uint64_t>& free_bytes,
                                int64_t n_layer, int rank);

/// The backend of every weight tensor (layer tensors with their layer, fused ones and
/// adapters included), except those every backend reads in place: rope frequency
/// divisors, and a token embedding tied to the output.
std::unordered_map<const Tensor*, int> place_weights(const ModelWeights& w, const Placement& p);

/// "a: layers 0-10, b: layers 11-21 + output" for logs.
std::string describe_placement(const Placement& p);

}  // namespace tessera
