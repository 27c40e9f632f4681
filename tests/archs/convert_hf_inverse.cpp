#include "convert_hf_inverse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

namespace tessera::test {
namespace {

int64_t rows_of(const gguf::TensorInfo& t) { return t.n_dims > 1 ? t.ne[1] : t.ne[0]; }

/// HF row r of the result is GGUF row `from(r)`.
std::vector<uint8_t> gather_rows(const gguf::TensorInfo& t, const std::function<int64_t(int64_t)>& from) {
  const int64_t rows = rows_of(t);
  const size_t row = t.nbytes / size_t(rows);
  std::vector<uint8_t> out(t.nbytes);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&out[size_t(r) * row], t.data + size_t(from(r)) * row, row);
  return out;
}

}  // namespace

std::vector<uint8_t> unpermute_rope(const gguf::TensorInfo& t, int64_t heads) {
  const int64_t hr = rows_of(t) / heads, half = hr / 2;
  // HF row h·hr + j·half + i holds GGUF row h·hr + 2i + j.
  return gather_rows(t, [&](int64_t r) {
    const int64_t h = r / hr, j = (r % hr) / half, i = r % half;
    return h * hr + 2 * i + j;
  });
}

std::vector<uint8_t> qkv_to_per_head(const gguf::TensorInfo& t, int64_t heads) {
  const int64_t hd = rows_of(t) / (3 * heads);
  // HF row (h, s, d) holds GGUF row (s, h, d).
  return gather_rows(t, [&](int64_t r) {
    const int64_t h = r / (3 * hd), s = (r / hd) % 3, d = r % hd;
    return (s * heads + h) * hd + d;
  });
}

std::vector<uint8_t> qkv_to_groups(const gguf::TensorInfo& t, int64_t heads, int64_t groups) {
  const int64_t per = heads / groups, hd = rows_of(t) / (heads + 2 * groups);
  // HF row (g, slot, d): slot < per is query head g·per + slot, slot per the group's k,
  // slot per + 1 its v; GGUF holds all q heads, then the k heads, then the v heads.
  return gather_rows(t, [&](int64_t r) {
    const int64_t g = r / ((per + 2) * hd), slot = (r / hd) % (per + 2), d = r % hd;
    if (slot < per) return (g * per + slot) * hd + d;
    return (heads + (slot == per ? 0 : groups) + g) * hd + d;
  });
}

std::vector<uint8_t> transposed(const gguf::TensorInfo& t) {
  const int64_t in = t.ne[0], outs = t.ne[1];
  const size_t el = t.nbytes / size_t(in * outs);
  std::vector<uint8_t> out(t.nbytes);
  for (int64_t o = 0; o < outs; ++o) {
    for (int64_t i = 0; i < in; ++i) std::memcpy(&out[size_t(i * outs + o) * el], t.data + size_t(o * in + i) * el, el);
  }
  return out;
}

void write_with_ffn(const gguf::File& model, int64_t n_ff, const std::string& path) {
  gguf::Writer w;
  w.set_alignment(model.alignment());
  for (const auto& [key, value] : model.metadata()) w.set(key, value);
  const std::string arch = *model.find("general.architecture")->as_string();
  const int64_t ff = model.find(arch + ".feed_forward_length")->as_int().value();
  w.set(arch + ".feed_forward_length", uint32_t(n_ff));
  for (const gguf::TensorInfo& t : model.tensors()) {
    const bool rows = t.name.find("ffn_up") != std::string::npos || t.name.find("ffn_gate") != std::string::npos;
    const bool cols = t.name.ends_with("ffn_down.weight");
    if (!rows && !cols) {
      w.add_tensor(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
      continue;
    }
    std::array<int64_t, 4> ne = t.ne;
    ne[rows && t.n_dims > 1 ? 1 : 0] = n_ff;
    const size_t el = t.nbytes / size_t(t.n_elements());
    std::vector<uint8_t> bytes(size_t(ne[0] * ne[1]) * el);
    for (int64_t r = 0; r < ne[1]; ++r) {
      for (int64_t c = 0; c < ne[0]; ++c) {
        const int64_t from_r = rows && t.n_dims > 1 ? r % ff : r, from_c = rows && t.n_dims > 1 ? c : c % t.ne[0];
        std::memcpy(&bytes[size_t(r * ne[0] + c) * el], t.data + size_t(from_r * t.ne[0] + from_c) * el, el);
      }
    }
    w.add_tensor(t.name, t.type, ne, t.n_dims, bytes.data(), bytes.size());
  }
  ASSERT_TRUE(w.write(path).is_ok()) << path;
}

void write_with_second_norm(const gguf::File& model, const std::string& path) {
  gguf::Writer w;
  w.set_alignment(model.alignment());
  for (const auto& [key, value] : model.metadata()) w.set(key, value);
  std::vector<std::vector<float>> reversed;
  reversed.reserve(model.tensors().size());
  for (const gguf::TensorInfo& t : model.tensors()) {
    w.add_tensor(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
    const size_t at = t.name.find(".attn_norm.");
    if (at == std::string::npos) continue;
    ASSERT_EQ(t.type, DType::F32) << t.name;
    std::vector<float>& v = reversed.emplace_back(size_t(t.ne[0]));
    std::memcpy(v.data(), t.data, t.nbytes);
    std::reverse(v.begin(), v.end());
    w.add_tensor(t.name.substr(0, at) + ".attn_norm_2." + t.name.substr(at + 11), t.type, t.ne, t.n_dims, v.data(),
                 t.nbytes);
  }
  ASSERT_TRUE(w.write(path).is_ok()) << path;
}

void write_with_output_copy(const gguf::File& model, const std::string& path) {
  gguf::Writer w;
  w.set_alignment(model.alignment());
  for (const auto& [key, value] : model.metadata()) w.set(key, value);
  const gguf::TensorInfo* embd = model.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  for (const gguf::TensorInfo& t : model.tensors()) {
    const gguf::TensorInfo& from = t.name == "output.weight" ? *embd : t;
    w.add_tensor(t.name, from.type, from.ne, from.n_dims, from.data, from.nbytes);
  }
  ASSERT_TRUE(w.write(path).is_ok()) << path;
}

}  // namespace tessera::test
