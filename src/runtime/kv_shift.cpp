#include "runtime/kv_shift.h"

#include "core/check.h"
#include "core/ops.h"

namespace tessera {

struct KvShift::ShiftGraph {
  int64_t n_kv = 0;
  Graph graph;
  Tensor* deltas = nullptr;  // I32 [n_kv]: each cell's pending shift
  std::unique_ptr<SchedGraph> plan;  // each layer's rotation runs where its cache lives
};

KvShift::KvShift(const HParams& h, Tensor* freq_factors, Scheduler& sched)
    : h_(h), freq_factors_(freq_factors), sched_(sched) {}
KvShift::~KvShift() = default;

// The model's YaRN frequencies with magnitude 1: a shift rotates the stored keys, which
// already carry the attention factor once.
RopeYarn KvShift::rotation_only() const {
  RopeYarn y = h_.rope_yarn();
  y.attn_factor = 1.0f;
  y.attn_factor = 1.0f / y.magnitude(h_.rope_freq_scale);  // cancels YaRN's own magnitude
  return y;
}

// Per layer: the key rows of cells [0, n_kv) seen as [head_dim, n_head_kv, n_kv],
// converted to F32 (from any cache type), rotated by the cell's delta (the model's rope mode, dims and
// frequency divisors), converted back into the same rows.
void KvShift::build(const KvCache& kv, int64_t n_kv) {
  graph_.reset();
  auto sg = std::make_unique<ShiftGraph>();
  sg->n_kv = n_kv;
  Graph& g = sg->graph;
  sg->deltas = g.arena().new_tensor(DType::I32, {n_kv, 1, 1, 1}, "kv_shift_deltas");
  sg->deltas->flags |= kFlagInput;
  for (const KvLayer& layer : kv.layers()) {
    Tensor* k = layer.k;
    // A quantized cache's rows are dequantized, rotated and quantized again (as the
    // reference engine does): the keys take the type's rounding a second time.
    Tensor* rows = ops::view(g, k, {h_.head_dim, h_.n_head_kv, n_kv, 1},
                             {k->nb[0], dtype_row_size(k->type, h_.head_dim), k->nb[1], k->nb[1] * size_t(n_kv)}, 0);
    Tensor* rotated = ops::rope(g, ops::cont(g, rows, DType::F32), sg->deltas, int(h_.n_rot), h_.rope_mode,
                                h_.rope_freq_base, h_.rope_freq_scale, freq_factors_, rotation_only());
    g.expand(ops::cpy(g, rotated, rows));
  }
  g.expand(sg->deltas);
  sg->plan = sched_.plan(g);
  graph_ = std::move(sg);
}

Status KvShift::apply(KvCache& kv) {
  if (!kv.has_shift()) return Status::ok();
  if (h_.positions != PositionKind::Rope) {  // ALiBi: positions live in the mask only
    kv.clear_shifts();
    return Status::ok();
  }
  const int64_t n_kv = kv.n_kv();
  if (!graph_ || graph_->n_kv != n_kv) build(kv, n_kv);
  const std::vector<int32_t> deltas = kv.shifts(n_kv);
  sched_.place(*graph_->plan);
  Tensor* t = graph_->deltas;
  t->buffer->backend().set_tensor(t, deltas.data(), 0, deltas.size() * sizeof(int32_t));
  TESSERA_RETURN_IF_ERROR(sched_.compute(*graph_->plan));
  kv.clear_shifts();
  return Status::ok();
}

}  // namespace tessera
