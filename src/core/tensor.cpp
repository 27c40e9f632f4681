#include "core/tensor.h"

#include "core/check.h"

namespace tessera {

Strides contiguous_strides(DType type, const Shape& ne) {
  const DTypeTraits& t = dtype_traits(type);
  Strides nb{};
  nb[0] = t.type_size;
  nb[1] = dtype_row_size(type, ne[0]);
  for (int i = 2; i < kMaxDims; ++i) nb[i] = nb[i - 1] * size_t(ne[i - 1]);
  return nb;
}

size_t Tensor::nbytes() const {
  if (nelements() == 0) return 0;
  const DTypeTraits& t = dtype_traits(type);
  size_t bytes = dtype_row_size(type, ne[0]);
  if (t.block_size == 1) bytes = t.type_size;  // then add the strided extent of dim 0 below
  if (t.block_size == 1) bytes += size_t(ne[0] - 1) * nb[0];
  for (int i = 1; i < kMaxDims; ++i) bytes += size_t(ne[i] - 1) * nb[i];
  return bytes;
}

bool Tensor::rows_contiguous() const { return nb[0] == dtype_traits(type).type_size; }

bool Tensor::is_contiguous() const {
  // Dimensions of extent 1 may carry any stride: they are never stepped over.
  const Strides dense = contiguous_strides(type, ne);
  for (int i = 0; i < kMaxDims; ++i) {
    if (ne[i] != 1 && nb[i] != dense[i]) return false;
  }
  return true;
}

}  // namespace tessera
