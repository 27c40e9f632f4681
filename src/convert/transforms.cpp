#include "convert/transforms.h"

#include <cstring>

namespace tessera::convert {
namespace {

void copy_row(std::vector<float>& out, int64_t to, const std::vector<float>& v, int64_t from, int64_t cols) {
  std::memcpy(&out[size_t(to * cols)], &v[size_t(from * cols)], size_t(cols) * sizeof(float));
}

/// LLaMA's rotary permutation of `rows` rows of `cols` values, `heads` heads: in each head,
/// row 2i + j comes from row j·(head_rows/2) + i.
void permute_rope(std::vector<float>& v, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t hr = rows / heads, half = hr / 2;
  std::vector<float> out(v.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) copy_row(out, h * hr + 2 * i + j, v, h * hr + j * half + i, cols);
    }
  }
  v.swap(out);
}

/// GPT-2's Conv1D: the reference transposes the [in, out] weight (transpose(1, 0)).
void transpose(std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> out(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[size_t(c * rows + r)] = v[size_t(r * cols + c)];
  }
  v.swap(out);
}

/// GPT-NeoX / BLOOM: the reference reshapes the rows to (heads, 3, head_dim) and
/// concatenates the [:, 0], [:, 1] and [:, 2] slices: row (h, s, d) goes to s·rows/3 + h·hd + d.
void qkv_per_head(std::vector<float>& v, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t hd = rows / (3 * heads);
  std::vector<float> out(v.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t s = 0; s < 3; ++s) {
      for (int64_t d = 0; d < hd; ++d) copy_row(out, s * heads * hd + h * hd + d, v, (h * 3 + s) * hd + d, cols);
    }
  }
  v.swap(out);
}

/// Falcon: the reference views the rows as (groups, q_per_group + 2, head_dim) and
/// concatenates every group's query heads, then each group's k (slot -2), then its v (-1).
void qkv_groups(std::vector<float>& v, int64_t rows, int64_t cols, int64_t heads, int64_t groups) {
  const int64_t per = heads / groups, hd = rows / (heads + 2 * groups);
  std::vector<float> out(v.size());
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t d = 0; d < hd; ++d) {
      const int64_t base = g * (per + 2) * hd;
      for (int64_t j = 0; j < per; ++j) copy_row(out, (g * per + j) * hd + d, v, base + j * hd + d, cols);
      copy_row(out, (heads + g) * hd + d, v, base + per * hd + d, cols);
      copy_row(out, (heads + groups + g) * hd + d, v, base + (per + 1) * hd + d, cols);
    }
  }
  v.swap(out);
}

Status rows_error(const TensorPlan& p, int64_t rows, const std::string& what) {
  return Status::error("convert: " + p.name + ": " + std::to_string(rows) + " rows do not split into " + what);
}

}  // namespace

std::vector<int64_t> source_ne(const TensorPlan& p) {
  std::vector<int64_t> ne = p.shape;
  if (p.name.ends_with("_exps.weight")) ne.pop_back();
  ne.back() *= p.parts;
  if (p.transform == Transform::Transpose && ne.size() == 2) std::swap(ne[0], ne[1]);
  return ne;
}

Status apply_transform(const TensorPlan& p, std::vector<float>& values) {
  const int64_t cols = p.shape.size() > 1 ? p.shape[0] : 1;
  if (p.parts > 1) {  // the plan's block of the fused rows
    const size_t n = values.size() / size_t(p.parts);
    values.erase(values.begin() + std::ptrdiff_t(n * size_t(p.part + 1)), values.end());
    values.erase(values.begin(), values.begin() + std::ptrdiff_t(n * size_t(p.part)));
  }
  const int64_t rows = int64_t(values.size()) / cols;
  switch (p.transform) {
    case Transform::None:
      return Status::ok();
    case Transform::PermuteRope:
      if (p.heads <= 0 || rows % (2 * p.heads) != 0) {
        return rows_error(p, rows, std::to_string(p.heads) + " heads of rotary pairs");
      }
      permute_rope(values, rows, cols, p.heads);
      return Status::ok();
    case Transform::AddOne:
      for (float& x : values) x += 1.0f;
      return Status::ok();
    case Transform::Transpose:
      // The values arrive [in][out] (in = GGUF's ne0 = cols); GGUF holds [out][in].
      transpose(values, cols, int64_t(values.size()) / cols);
      return Status::ok();
    case Transform::QkvPerHead:
      if (p.heads <= 0 || rows % (3 * p.heads) != 0) return rows_error(p, rows, "3 × " + std::to_string(p.heads) + " heads");
      qkv_per_head(values, rows, cols, p.heads);
      return Status::ok();
    case Transform::QkvGroups:
      if (p.heads_kv <= 0 || p.heads % p.heads_kv != 0 || rows % (p.heads + 2 * p.heads_kv) != 0) {
        return rows_error(p, rows, std::to_string(p.heads_kv) + " groups of " + std::to_string(p.heads) + " query heads");
      }
      qkv_groups(values, rows, cols, p.heads, p.heads_kv);
      return Status::ok();
  }
  return Status::error("convert: " + p.name + ": unknown transform");
}

}  // namespace tessera::convert
