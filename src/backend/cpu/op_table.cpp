// The CPU op table: one entry per Op, built once; supports() and compute come from the
// same entry.
#include "backend/cpu/op_table.h"

#include <array>

#include "backend/cpu/ops/attention.h"
#include "backend/cpu/ops/attention_back.h"
#include "backend/cpu/ops/backward.h"
#include "backend/cpu/ops/copy.h"
#include "backend/cpu/ops/cross_entropy.h"
#include "backend/cpu/ops/elementwise.h"
#include "backend/cpu/ops/mul_mat.h"
#include "backend/cpu/ops/mul_mat_id.h"
#include "backend/cpu/ops/norm.h"
#include "backend/cpu/ops/rope.h"
#include "backend/cpu/ops/routing.h"
#include "backend/cpu/ops/softmax.h"

namespace tessera::cpu {
namespace {

using Table = std::array<OpEntry, size_t(Op::Count)>;

constexpr Table make_table() {
  Table t{};
  auto set = [&t](Op op, OpEntry e) { t[size_t(op)] = e; };
  set(Op::GetRows, {get_rows_supports, get_rows_compute, nullptr, nullptr});
  set(Op::SetRows, {set_rows_supports, set_rows_compute, set_rows_work_size, nullptr});
  set(Op::Add, {binary_supports, add_compute, binary_work_size, nullptr});
  set(Op::Mul, {binary_supports, mul_compute, binary_work_size, nullptr});
  set(Op::Scale, {unary_supports, scale_compute, nullptr, nullptr});
  set(Op::MulMat, {mul_mat_supports, mul_mat_compute, mul_mat_work_size, mul_mat_prepare});
  set(Op::RmsNorm, {norm_supports, rms_norm_compute, nullptr, nullptr});
  set(Op::Norm, {norm_supports, norm_compute, nullptr, nullptr});
  set(Op::Rope, {rope_supports, rope_compute, rope_work_size, nullptr});
  set(Op::SoftMax, {soft_max_supports, soft_max_compute, soft_max_work_size, nullptr});
  set(Op::Silu, {unary_supports, silu_compute, nullptr, nullptr});
  set(Op::Gelu, {unary_supports, gelu_compute, nullptr, nullptr});
  set(Op::ReluSqr, {unary_supports, relu_sqr_compute, nullptr, nullptr});
  set(Op::Clamp, {unary_supports, clamp_compute, nullptr, nullptr});
  set(Op::Softcap, {unary_supports, softcap_compute, nullptr, nullptr});
  set(Op::Cpy, {cpy_supports, copy_compute, copy_work_size, nullptr});
  set(Op::Cont, {cont_supports, copy_compute, copy_work_size, nullptr});
  set(Op::Concat, {concat_supports, concat_compute, nullptr, nullptr});
  set(Op::Attention, {attention_supports, attention_compute, attention_work_size, attention_prepare});
  set(Op::Sigmoid, {unary_supports, sigmoid_compute, nullptr, nullptr});
  set(Op::Div, {div_supports, div_compute, div_work_size, nullptr});
  set(Op::SumRows, {sum_rows_supports, sum_rows_compute, nullptr, nullptr});
  set(Op::TopK, {top_k_supports, top_k_compute, top_k_work_size, nullptr});
  set(Op::TakeAlong, {take_along_supports, take_along_compute, nullptr, nullptr});
  set(Op::MulMatId, {mul_mat_id_supports, mul_mat_id_compute, mul_mat_id_work_size, mul_mat_id_prepare});
  set(Op::AttentionBack, {attention_back_supports, attention_back_compute, attention_back_work_size,
                          attention_back_prepare});
  set(Op::CrossEntropy, {cross_entropy_supports, cross_entropy_compute, cross_entropy_work_size,
                         cross_entropy_prepare});
  set(Op::CrossEntropyBack,
      {cross_entropy_back_supports, cross_entropy_back_compute, nullptr, nullptr});
  set(Op::Acc, {acc_supports, acc_compute, acc_work_size, acc_prepare});
  set(Op::SumTo, {sum_to_supports, sum_to_compute, sum_to_work_size, nullptr});
  set(Op::GetRowsBack,
      {get_rows_back_supports, get_rows_back_compute, get_rows_back_work_size, get_rows_back_prepare});
  set(Op::TakeAlongBack, {take_along_back_supports, take_along_back_compute, nullptr, nullptr});
  set(Op::RmsNormBack, {row_pair_supports, rms_norm_back_compute, row_pair_work_size, nullptr});
  set(Op::SoftMaxBack, {row_pair_supports, soft_max_back_compute, row_pair_work_size, nullptr});
  set(Op::SiluBack, {row_pair_supports, silu_back_compute, row_pair_work_size, nullptr});
  // None and the views (View, Reshape, Permute, Transpose) compute nothing.
  return t;
}

constexpr Table kTable = make_table();

}  // namespace

const OpEntry& op_entry(Op op) { return kTable[size_t(op)]; }

bool supports(const Tensor* node) {
  if (op_is_view(node->op)) return true;
  const OpEntry& e = op_entry(node->op);
  return e.supports != nullptr && e.compute != nullptr && e.supports(node);
}

}  // namespace tessera::cpu
