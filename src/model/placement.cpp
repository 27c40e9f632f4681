#include "model/placement.h"

#include <algorithm>
#include <charconv>
#include <numeric>

namespace tessera {
namespace {

Result<int64_t> parse_layer(std::string_view text, int64_t n_layer, const std::string& entry) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::error("--layers: '" + entry + "': '" + std::string(text) + "' is not a layer number");
  }
  if (v < 0 || v >= n_layer) {
    return Status::error("--layers: '" + entry + "': layer " + std::to_string(v) + " is outside the model's [0, " +
                         std::to_string(n_layer - 1) + "]");
  }
  return v;
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

Placement single_placement(int64_t n_layer) {
  Placement p;
  p.backends = {"cpu"};
  p.layer.assign(size_t(n_layer), 0);
  return p;
}

Result<Placement> parse_layer_placement(const std::string& spec, int64_t n_layer) {
  Placement p;
  p.layer.assign(size_t(n_layer), -1);
  size_t at = 0;
  while (at <= spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string entry = spec.substr(at, comma - at);
    at = comma + 1;
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      return Status::error("--layers: '" + entry + "' is not RANGE:NAME (e.g. 0-10:a)");
    }
    const std::string name = entry.substr(colon + 1);
    if (!valid_name(name)) {
      return Status::error("--layers: '" + entry + "': the backend name must be letters, digits or _");
    }
    if (name.starts_with("cuda") || name.starts_with("gpu")) {
      return Status::error("--layers: '" + entry + "': names stand for CPU backend instances (e.g. "
                           "0-10:a,11-21:b); layers go to the GPU with -ngl N");
    }
    const std::string_view range = std::string_view(entry).substr(0, colon);
    const size_t dash = range.find('-');
    Result<int64_t> first = parse_layer(range.substr(0, dash), n_layer, entry);
    if (!first) return first.status();
    Result<int64_t> last = dash == std::string::npos ? first : parse_layer(range.substr(dash + 1), n_layer, entry);
    if (!last) return last.status();
    if (*last < *first) return Status::error("--layers: '" + entry + "': the range ends before it starts");
    auto it = std::find(p.backends.begin(), p.backends.end(), name);
    const int b = int(it - p.backends.begin());
    if (it == p.backends.end()) p.backends.push_back(name);
    for (int64_t il = *first; il <= *last; ++il) {
      if (p.layer[size_t(il)] >= 0) {
        return Status::error("--layers: '" + entry + "': layer " + std::to_string(il) + " is placed twice");
      }
      p.layer[size_t(il)] = b;
    }
    if (comma == spec.size()) break;
  }
  for (int& b : p.layer) b = std::max(b, 0);
  if (n_layer > 0) {
    p.input = p.layer.front();
    p.output = p.layer.back();
  }
  return p;
}

Result<Placement> gpu_placement(int64_t n_layer, int64_t n_gpu, int device) {
  if (n_gpu < 0) return Status::error("-ngl: " + std::to_string(n_gpu) + " is not a layer count (0 or more)");
  if (device < 0) return Status::error("--device: " + std::to_string(device) + " is not a device index");
  Placement p = single_placement(n_layer);
  if (n_gpu == 0) return p;
  p.backends.push_back("cuda" + std::to_string(device));
  p.gpu = {-1, device};
  const int64_t first = std::max<int64_t>(0, n_layer - n_gpu);
  for (int64_t il = first; il < n_layer; ++il) p.layer[size_t(il)] = 1;
  p.input = 0;
  p.output = n_gpu > n_layer ? 1 : 0;
  return p;
}

Result<Placement> mpi_placement(const std::vector<int64_t>& counts, const std::vector<uint64_t>& free_bytes,
                                int64_t n_layer, int rank) {
  const size_t n_ranks = free_bytes.size();
  std::vector<int64_t> n(counts);
  if (n.empty()) {
    // In proportion to free memory, each rank at least one layer where there are enough.
    const double total = std::accumulate(free_bytes.begin(), free_bytes.end(), 0.0);
    int64_t given = 0;
    for (size_t r = 0; r < n_ranks; ++r) {
      const double upto = std::accumulate(free_bytes.begin(), free_bytes.begin() + long(r) + 1, 0.0);
      const int64_t end = total > 0 ? int64_t(double(n_layer) * upto / total + 0.5)
                                    : int64_t(double(n_layer) * double(r + 1) / double(n_ranks) + 0.5);
      n.push_back(std::max<int64_t>(end - given, 0));
      given += n.back();
    }
    n.back() += n_layer - given;
  }
  if (n.size() != n_ranks) {
    return Status::error("--mpi-layers: " + std::to_string(n.size()) + " counts for " + std::to_string(n_ranks) +
                         " ranks (give one count per rank)");
  }
  int64_t sum = 0;
  for (int64_t c : n) {
    if (c < 0) return Status::error("--mpi-layers: a negative layer count");
    sum += c;
  }
  if (sum != n_layer) {
    return Status::error("--mpi-layers: the counts add up to " + std::to_string(sum) + " layers, but the model has " +
                         std::to_string(n_layer));
  }
  Placement p;
  p.mpi = true;
  p.rank = rank;
  for (size_t r = 0; r < n_ranks; ++r) {
    p.backends.push_back("rank " + std::to_string(r));
    p.layer.insert(p.layer.end(), size_t(n[r]), int(r));
  }
  p.input = 0;
  p.output = int(n_ranks) - 1;
  return p;
}

std::unordered_map<const Tensor*, int> place_weights(const ModelWeights& w, const Placement& p) {
  std::unordered_map<const Tensor*, int> at;
  // A token embedding tied to the output projection is read at both ends: the first
  // backend takes rows of it, the last multiplies by all of it. It stays unplaced, read
  // in place from host memory by both (each MPI rank maps the file) — unless the output
  // is on a GPU, which cannot read host memory: there it lives, and rows are taken there.
  const bool tied = w.output == nullptr;
  Tensor* embd = !tied ? w.token_embd : nullptr;
  if (tied && p.gpu_of(p.output) >= 0) at[w.token_embd] = p.output;
  for (Tensor* t : {embd, w.token_embd_norm, w.token_embd_norm_b, w.position_embd, w.token_types}) {
    if (t) at[t] = p.input;
  }
  for (Tensor* t : {w.output_norm, w.output_norm_b, w.output}) {
    if (t) at[t] = p.output;
  }
  for (size_t il = 0; il < w.layers.size(); ++il) {
    for_each_tensor(w.layers[il], [&](Tensor* t) { at[t] = p.layer[il]; });
  }
  return at;
}

std::string describe_placement(const Placement& p) {
  std::string out;
  for (size_t b = 0; b < p.backends.size(); ++b) {
    std::string layers;
    for (size_t il = 0; il < p.layer.size();) {
      if (p.layer[il] != int(b)) {
        ++il;
        continue;
      }
      size_t end = il;
      while (end + 1 < p.layer.size() && p.layer[end + 1] == int(b)) ++end;
      if (!layers.empty()) layers += ',';
      layers += std::to_string(il);
      if (end > il) {
        layers += '-';
        layers += std::to_string(end);
      }
      il = end + 1;
    }
    if (!out.empty()) out += "; ";
    out += p.backends[b];
    out += ": layers ";
    out += layers.empty() ? std::string("none") : layers;
    if (p.input == int(b)) out += " + embeddings";
    if (p.output == int(b)) out += " + output";
  }
  return out;
}

}  // namespace tessera
