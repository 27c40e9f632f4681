#include "ops/op_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vec.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace tessera::test {

struct OpTest::Memory {
  Tensor* tensor = nullptr;
  void* data = nullptr;
  size_t size = 0;
  std::vector<uint8_t> init;  // leaves: bytes restored before every run
  ~Memory() { std::free(data); }
};

namespace {

void* alloc64(size_t size) {
  const size_t rounded = (size + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
}


size_t offset_of(const Tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return size_t(i0) * t->nb[0] + size_t(i1) * t->nb[1] + size_t(i2) * t->nb[2] +
         size_t(i3) * t->nb[3];
}

// Compares got with want; reports the first few elements out of tolerance.
void compare(const std::vector<double>& got, const Expected& want, Tolerance tol,
             const std::string& label) {
  ASSERT_EQ(got.size(), want.value.size()) << label;
  int reported = 0;
  int64_t failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want.value[i];
    const double mag = want.mag.empty() ? std::fabs(w) : want.mag[i];
    const bool ok = std::isinf(w) ? got[i] == w : std::fabs(got[i] - w) <= tol.abs + tol.rel * mag;
    if (ok) continue;
    ++failures;
    if (reported++ < 5) {
      ADD_FAILURE() << label << ": element " << i << ": got " << got[i] << ", want " << w
                    << " (|diff| " << std::fabs(got[i] - w) << ", allowed "
                    << tol.abs + tol.rel * mag << ")";
    }
  }
  EXPECT_EQ(failures, 0) << label << ": " << failures << " of " << got.size()
                         << " elements out of tolerance";
}

bool runs_in_place(const Tensor* node) {
  switch (node->op) {
    case Op::Add:
    case Op::Mul:
    case Op::Scale:
    case Op::Silu:
    case Op::Gelu:
    case Op::ReluSqr:
    case Op::Clamp:
    case Op::Softcap:
    case Op::Acc:  // acc_zeros has no src0
      return node->src[0] != nullptr && node->src[0]->is_contiguous() &&
             node->src[0]->type == node->type && node->src[0]->nbytes() == node->nbytes();
    default:
      return false;
  }
}

}  // namespace

double load(DType type, const uint8_t* p) {
  float f;
  uint16_t h;
  int32_t i;
  switch (type) {
    case DType::F32:
      std::memcpy(&f, p, 4);
      return f;
    case DType::F16:
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    case DType::BF16:
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    case DType::I32:
      std::memcpy(&i, p, 4);
      return i;
    default:
      ADD_FAILURE() << "op test: cannot read type " << dtype_name(type);
      return 0;
  }
}

void for_each_index(const Shape& ne,
                    const std::function<void(int64_t, int64_t, int64_t, int64_t)>& f) {
  for (int64_t i3 = 0; i3 < ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) f(i0, i1, i2, i3);
      }
    }
  }
}

double round_to(DType type, double v) {
  switch (type) {
    case DType::F16:
      return f16_to_f32(f32_to_f16(float(v)));
    case DType::BF16:
      return bf16_to_f32(f32_to_bf16(float(v)));
    default:
      return float(v);
  }
}

OpTest::OpTest(uint64_t seed) : rng_(uint32_t(seed)) {}
OpTest::~OpTest() = default;

Tensor* OpTest::add_leaf(DType type, const Shape& ne, const std::vector<float>& values) {
  Tensor* t = graph_.arena().new_tensor(type, ne);
  t->flags |= kFlagInput;
  auto m = std::make_unique<Memory>();
  m->tensor = t;
  m->size = t->nbytes();
  m->data = alloc64(m->size);
  m->init.resize(m->size);
  const size_t ts = dtype_traits(type).type_size;
  if (quant::format(type) != nullptr && !values.empty()) {  // whole rows, quantized as src/quant does
    quant::quantize_rows(type, values.data(), m->init.data(), ne[1] * ne[2] * ne[3], ne[0]);
    t->data = m->data;
    memory_.push_back(std::move(m));
    return t;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = m->init.data() + i * ts;
    if (type == DType::F32) {
      std::memcpy(p, &values[i], 4);
    } else if (type == DType::F16 || type == DType::BF16) {
      const uint16_t h = type == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      std::memcpy(p, &h, 2);
    } else {
      ADD_FAILURE() << "op test: cannot fill type " << dtype_name(type);
    }
  }
  t->data = m->data;
  memory_.push_back(std::move(m));
  return t;
}

Tensor* OpTest::input(DType type, const Shape& ne, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size_t(ne[0] * ne[1] * ne[2] * ne[3]));
  for (float& x : v) x = dist(rng_);
  return add_leaf(type, ne, v);
}

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::Permuted:
      return "permuted";
    case Layout::Sliced:
      return "sliced";
  }
  return "?";
}

Tensor* laid_out(Graph& g, const Shape& ne, Layout layout, const std::function<Tensor*(const Shape&)>& make) {
  switch (layout) {
    case Layout::Contiguous:
      return make(ne);
    case Layout::Transposed:
      return ops::transpose(g, make({ne[1], ne[0], ne[2], ne[3]}));
    case Layout::Permuted:
      return ops::permute(g, make({ne[0], ne[2], ne[1], ne[3]}), 0, 2, 1, 3);
    case Layout::Sliced: {
      Tensor* big = make({ne[0] + 3, ne[1] + 1, ne[2], ne[3] + 1});
      const size_t offset = big->nb[1] + 2 * big->nb[0];
      return ops::view(g, big, ne, big->nb, offset);
    }
  }
  return nullptr;
}

Tensor* OpTest::input(DType type, const Shape& ne, Layout layout, float lo, float hi) {
  return laid_out(graph_, ne, layout, [&](const Shape& s) { return input(type, s, lo, hi); });
}

Tensor* OpTest::input_values(DType type, const Shape& ne, const std::vector<float>& values) {
  EXPECT_EQ(int64_t(values.size()), ne[0] * ne[1] * ne[2] * ne[3]);
  return add_leaf(type, ne, values);
}

Tensor* OpTest::ids(const std::vector<int32_t>& ids) {
  Tensor* t = add_leaf(DType::I32, {int64_t(ids.size()), 1, 1, 1}, {});
  std::memcpy(memory_.back()->init.data(), ids.data(), ids.size() * 4);
  return t;
}

double OpTest::at(const Tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
  const Tensor* base = t->view_src ? t->view_src : t;
  const int64_t block = dtype_traits(t->type).block_size;  // quantized: element i0 of its block
  const size_t off = (t->view_src ? t->view_offset : 0) + offset_of(t, i0 / block, i1, i2, i3);
  for (const auto& m : memory_) {
    if (m->tensor != base || m->init.empty()) continue;
    if (block == 1) return load(t->type, m->init.data() + off);
    std::vector<float> values(static_cast<size_t>(block));
    quant::dequantize_rows(t->type, m->init.data() + off, values.data(), 1, block);
    return values[size_t(i0 % block)];
  }
  ADD_FAILURE() << "op test: at() on a tensor that is not (a view of) a leaf";
  return 0;
}

void OpTest::prepare_graph(Tensor* out) {
  if (planned_ == out) return;
  ASSERT_EQ(planned_, nullptr) << "one output per OpTest";
  planned_ = out;
  graph_.expand(out);
  for (Tensor* node : graph_.nodes()) {
    if (node->view_src) {
      node->data = static_cast<char*>(node->view_src->data) + node->view_offset;
      continue;
    }
    if (in_place_ && runs_in_place(node)) {
      node->data = node->src[0]->data;
      continue;
    }
    auto m = std::make_unique<Memory>();
    m->tensor = node;
    m->size = node->nbytes();
    m->data = alloc64(m->size);
    node->data = m->data;
    memory_.push_back(std::move(m));
  }
}

// Leaves get their initial bytes back (cpy/set_rows write into them); computed nodes
// are filled with NaN bytes so that unwritten elements show.
void OpTest::reset_memory() {
  for (const auto& m : memory_) {
    if (!m->init.empty()) {
      std::memcpy(m->data, m->init.data(), m->size);
    } else {
      std::memset(m->data, 0xff, m->size);
    }
  }
}

std::vector<uint8_t> OpTest::element_bytes(const Tensor* t) const {
  const size_t ts = dtype_traits(t->type).type_size;
  std::vector<uint8_t> bytes;
  bytes.reserve(size_t(t->nelements()) * ts);
  for_each_index(t->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const auto* p = static_cast<const uint8_t*>(t->data) + offset_of(t, i0, i1, i2, i3);
    bytes.insert(bytes.end(), p, p + ts);
  });
  return bytes;
}

std::vector<double> OpTest::run(Tensor* out, int nth) {
  prepare_graph(out);
  reset_memory();
  CpuBackend backend(nth);
  const Status st = backend.compute(graph_);
  EXPECT_TRUE(st.is_ok()) << st.message();
  std::vector<double> values;
  values.reserve(size_t(out->nelements()));
  for_each_index(out->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    values.push_back(
        load(out->type, static_cast<const uint8_t*>(out->data) + offset_of(out, i0, i1, i2, i3)));
  });
  return values;
}

void OpTest::check(Tensor* out, const Expected& want, Tolerance tol) {
  using cpu::Isa;
  const Isa saved = cpu::active_isa();
  for (Isa isa : {Isa::Reference, Isa::Avx2, Isa::Avx512}) {
    if (!cpu::set_active_isa(isa)) continue;
    std::vector<uint8_t> first;
    for (int nth = 1; nth <= 3; ++nth) {
      const std::string label =
          std::string(cpu::isa_name(isa)) + ", " + std::to_string(nth) + " thread(s)";
      compare(run(out, nth), want, tol, label);
      std::vector<uint8_t> bytes = element_bytes(out);
      if (nth == 1) {
        first = std::move(bytes);
      } else {
        EXPECT_TRUE(bytes == first) << label << ": result differs from 1 thread's";
      }
    }
  }
  cpu::set_active_isa(saved);
}

}  // namespace tessera::test
