// A tensor: a typed, strided window of up to 4 dimensions, and (in a graph) the
// op that produces it. Dimension 0 is the innermost (contiguous) one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/op.h"
#include "tessera/dtype.h"

namespace tessera {

class Buffer;

constexpr int kMaxSrc = 5;

using Shape = std::array<int64_t, kMaxDims>;

enum TensorFlag : uint32_t {
  kFlagInput = 1u << 0,   // set by the caller before each compute
  kFlagOutput = 1u << 1,  // read by the caller after compute; never reused by the allocator
  kFlagWeight = 1u << 2,  // model parameter
};

struct Tensor {
  DType type = DType::F32;
  Shape ne{1, 1, 1, 1};  // elements per dimension
  Strides nb{};          // bytes between consecutive elements/rows/planes/...

  Op op = Op::None;
  OpParams params;
  std::array<Tensor*, kMaxSrc> src{};

  Tensor* view_src = nullptr;  // the tensor whose memory a view points into
  size_t view_offset = 0;      // bytes from view_src->data

  void* data = nullptr;        // set by a buffer or the graph allocator
  Buffer* buffer = nullptr;
  uint32_t flags = 0;
  std::string name;

  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
  /// Bytes spanned from the first to one past the last element.
  size_t nbytes() const;
  size_t row_size() const { return dtype_row_size(type, ne[0]); }
  bool is_contiguous() const;
  /// Rows are contiguous (dim 0 dense) though rows themselves may be strided.
  bool rows_contiguous() const;
  bool same_shape(const Tensor& o) const { return ne == o.ne; }
  template <typename T>
  T* ptr(int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]);
  }
};

/// Dense strides for a shape of a type.
Strides contiguous_strides(DType type, const Shape& ne);

}  // namespace tessera
