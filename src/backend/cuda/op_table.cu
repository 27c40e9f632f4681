#include <array>

#include "backend/cuda/op_table.cuh"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

using Table = std::array<OpEntry, size_t(Op::Count)>;

Table make_table() {
  Table t{};
  auto set = [&](Op op, OpEntry e) { t[size_t(op)] = e; };
  set(Op::GetRows, {get_rows_supports, get_rows_compute});
  set(Op::SetRows, {set_rows_supports, set_rows_compute});
  set(Op::Add, {binary_supports, add_compute});
  set(Op::Mul, {binary_supports, mul_compute});
  set(Op::Scale, {unary_supports, scale_compute});
  set(Op::MulMat, {mul_mat_supports, mul_mat_compute});
  set(Op::RmsNorm, {norm_supports, rms_norm_compute});
  set(Op::Norm, {norm_supports, norm_compute});
  set(Op::Rope, {rope_supports, rope_compute});
  set(Op::SoftMax, {soft_max_supports, soft_max_compute});
  set(Op::Silu, {unary_supports, silu_compute});
  set(Op::Gelu, {unary_supports, gelu_compute});
  set(Op::ReluSqr, {unary_supports, relu_sqr_compute});
  set(Op::Clamp, {unary_supports, clamp_compute});
  set(Op::Cpy, {cpy_supports, copy_compute});
  set(Op::Cont, {cont_supports, copy_compute});
  set(Op::Concat, {concat_supports, concat_compute});
  set(Op::Attention, {attention_supports, attention_compute});
  // The backward ops of training stay on the CPU: the scheduler places them there.
  return t;
}

const Table& table() {
  static const Table t = make_table();
  return t;
}

}  // namespace

const OpEntry& op_entry(Op op) { return table()[size_t(op)]; }

bool supports(const Tensor* node) {
  if (op_is_view(node->op) || node->op == Op::None) return true;
  const OpEntry& e = op_entry(node->op);
  return e.supports != nullptr && e.supports(node);
}

}  // namespace tessera::cuda
