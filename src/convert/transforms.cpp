#include "convert/transforms.h"

#include <cstring>

namespace tessera::convert {
namespace {

/// LLaMA's rotary permutation of `rows` rows of `cols` values, `heads` heads: in each head,
/// row 2i + j comes from row j·(head_rows/2) + i.
void permute_rope(std::vector<float>& v, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t hr = rows / heads, half = hr / 2;
  std::vector<float> out(v.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t to = h * hr + 2 * i + j, from = h * hr + j * half + i;
        std::memcpy(&out[size_t(to * cols)], &v[size_t(from * cols)], size_t(cols) * sizeof(float));
      }
    }
  }
  v.swap(out);
}

}  // namespace

Status apply_transform(const TensorPlan& p, std::vector<float>& values) {
  switch (p.transform) {
    case Transform::None:
      return Status::ok();
    case Transform::PermuteRope: {
      const int64_t cols = p.shape[0], rows = int64_t(values.size()) / cols;
      if (p.heads <= 0 || rows % (2 * p.heads) != 0) {
        return Status::error("convert: " + p.name + ": " + std::to_string(rows) + " rows do not split into " +
                             std::to_string(p.heads) + " heads of rotary pairs");
      }
      permute_rope(values, rows, cols, p.heads);
      return Status::ok();
    }
    case Transform::AddOne:
      for (float& x : values) x += 1.0f;
      return Status::ok();
  }
  return Status::error("convert: " + p.name + ": unknown transform");
}

}  // namespace tessera::convert
