// Fused projections: matrices that multiply the same input (a layer's q, k and v; its
// ffn gate and up) joined into one matrix, so that one mul_mat quantizes the input once
// and the threads meet at one barrier instead of three (or two).
//
// Repacked (_X16) matrices are groups of 16 rows one after the other, so two of one
// type and row length placed back to back are one matrix with the rows concatenated;
// repack_weights places each such set back to back. Each output row is computed by the
// same kernel with the same arithmetic as before, so the logits do not change.
#pragma once

#include "model/weights.h"

namespace tessera {

/// For each layer of `w`, creates in `arena` the fused tensors `wqkv` (wq, wk, wv) and
/// `ffn_gate_up` (ffn_gate, ffn_up) where the parts are repacked matrices (an _X16
/// type) of one type and row length lying back to back in memory: the rows of the parts
/// in order, pointing at the first part's data (gate and up also need one row count).
/// The parts keep their own tensors. Fields stay null elsewhere, and everywhere when
/// TESSERA_FUSE=0 is set. Returns the number of fused tensors created.
int fuse_projections(ModelWeights& w, TensorArena& arena);

}  // namespace tessera
