// A reranker's classification head (Model::classify): two small products on one vector
// per text, done here in double from the file's own bytes rather than in the graph, so
// that the graph of an encoder stays "final states of the output tokens" whatever the
// pooling, and the head is read where the file maps it whichever backend holds the layers.
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "model/model_impl.h"
#include "quant/convert.h"
#include "tessera/gguf.h"
#include "tessera/model.h"

namespace tessera {
namespace {

/// Row r of tensor `name` ([ne0, ne1]) as floats.
std::vector<float> tensor_row(const gguf::File& file, const std::string& name, int64_t r) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  TESSERA_CHECK_MSG(t != nullptr && r < t->ne[1], "classify: tensor missing or row out of range");
  std::vector<float> row(size_t(t->ne[0]));
  const size_t row_bytes = dtype_row_size(t->type, t->ne[0]);
  quant::to_float_fn(t->type)(t->data + size_t(r) * row_bytes, row.data(), t->ne[0]);
  return row;
}

/// W·x + b for W [n_in, n_out] (rows of n_in) and b [n_out], in double.
std::vector<double> affine(const gguf::File& file, const std::string& w, const std::string& b,
                           const std::vector<double>& x) {
  const gguf::TensorInfo* t = file.find_tensor(w);
  TESSERA_CHECK(t != nullptr && t->ne[0] == int64_t(x.size()));
  const std::vector<float> bias = tensor_row(file, b, 0);
  std::vector<double> y(size_t(t->ne[1]));
  for (int64_t r = 0; r < t->ne[1]; ++r) {
    const std::vector<float> row = tensor_row(file, w, r);
    double s = bias[size_t(r)];
    for (size_t i = 0; i < x.size(); ++i) s += double(row[i]) * x[i];
    y[size_t(r)] = s;
  }
  return y;
}

}  // namespace

std::vector<float> Model::classify(std::span<const float> x) const {
  TESSERA_CHECK_MSG(impl_->info.rank_head, "classify: the model has no classification head");
  TESSERA_CHECK(int64_t(x.size()) == impl_->info.n_embd);
  const gguf::File& f = *impl_->file;
  std::vector<double> h = affine(f, "cls.weight", "cls.bias", std::vector<double>(x.begin(), x.end()));
  for (double& v : h) v = std::tanh(v);
  if (impl_->weights.variant.has(&BlockVariant::rank_out)) h = affine(f, "cls.output.weight", "cls.output.bias", h);
  return std::vector<float>(h.begin(), h.end());
}

}  // namespace tessera
