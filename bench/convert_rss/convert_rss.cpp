// The memory `tessera convert` needs: writes a Hugging Face checkpoint of a model's shape
// (random BF16 weights, TinyLlama-1.1B's by default, in N shards with an index), runs
// `tessera convert` on it as a child process, and reports the child's peak resident set
// (getrusage's ru_maxrss) against the bound, 2× the largest tensor + 200 MB.
//
//   tessera_convert_rss --tessera build/tessera [--dir /tmp/convert-rss] [--shards 3]
//                       [--layers 22] [--type f16] [--keep]
//
// Exit 0 when the peak is under the bound, 1 over it, 2 on a usage or I/O error.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/safetensors.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// TinyLlama-1.1B's config.json (the shape; the weights here are random).
struct Shape {
  int64_t hidden = 2048, ff = 5632, layers = 22, heads = 32, kv_heads = 4, vocab = 32000;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

std::vector<Tensor> tensors_of(const Shape& s) {
  const int64_t kv = s.hidden / s.heads * s.kv_heads;
  std::vector<Tensor> t = {{"model.embed_tokens.weight", {s.vocab, s.hidden}}};
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {s.hidden}});
    t.push_back({p + "self_attn.q_proj.weight", {s.hidden, s.hidden}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, s.hidden}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, s.hidden}});
    t.push_back({p + "self_attn.o_proj.weight", {s.hidden, s.hidden}});
    t.push_back({p + "post_attention_layernorm.weight", {s.hidden}});
    t.push_back({p + "mlp.gate_proj.weight", {s.ff, s.hidden}});
    t.push_back({p + "mlp.up_proj.weight", {s.ff, s.hidden}});
    t.push_back({p + "mlp.down_proj.weight", {s.hidden, s.ff}});
  }
  t.push_back({"model.norm.weight", {s.hidden}});
  t.push_back({"lm_head.weight", {s.vocab, s.hidden}});
  return t;
}

/// Random BF16 values of about N(0, 0.02²) (a sum of uniforms), from a xorshift generator.
void fill_random(std::vector<uint8_t>& bytes, uint64_t& state) {
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const float u = float(int64_t(state & 0xFFFF) + int64_t((state >> 16) & 0xFFFF) - 65535) / 65536.0f;
    uint32_t bits;
    const float v = 0.035f * u;
    std::memcpy(&bits, &v, 4);
    bytes[i] = uint8_t(bits >> 16);
    bytes[i + 1] = uint8_t(bits >> 24);
  }
}

bool write_checkpoint(const fs::path& dir, const Shape& s, int shards, int64_t* largest) {
  fs::create_directories(dir);
  json config = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
                 {"hidden_size", s.hidden}, {"intermediate_size", s.ff}, {"num_hidden_layers", s.layers},
                 {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kv_heads},
                 {"vocab_size", s.vocab}, {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-5},
                 {"rope_theta", 10000.0}, {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}};
  std::ofstream(dir / "config.json") << config.dump(2);
  const std::vector<Tensor> all = tensors_of(s);
  int64_t total = 0;
  *largest = 0;
  for (const Tensor& t : all) {
    total += t.elements();
    *largest = std::max(*largest, t.elements() * 2);
  }
  json index = {{"metadata", {{"total_size", total * 2}}}, {"weight_map", json::object()}};
  uint64_t state = 0x9E3779B97F4A7C15ull;
  size_t next = 0;
  for (int k = 0; k < shards; ++k) {
    const std::string file = "model-" + std::to_string(100001 + k).substr(1) + "-of-" +
                             std::to_string(100000 + shards).substr(1) + ".safetensors";
    std::vector<std::vector<uint8_t>> data;
    std::vector<tessera::safetensors::WriteTensor> out;
    const size_t end = all.size() * size_t(k + 1) / size_t(shards);
    data.reserve(end - next);
    for (; next < end; ++next) {
      const Tensor& t = all[next];
      data.emplace_back(size_t(t.elements()) * 2);
      fill_random(data.back(), state);
      out.push_back({t.name, tessera::safetensors::Dtype::BF16, t.shape, data.back()});
      index["weight_map"][t.name] = file;
    }
    if (tessera::Status st = tessera::safetensors::write((dir / file).string(), out); !st) {
      std::fprintf(stderr, "convert_rss: %s\n", st.message().c_str());
      return false;
    }
    std::fprintf(stderr, "convert_rss: wrote %s (%zu tensors)\n", file.c_str(), out.size());
  }
  std::ofstream(dir / "model.safetensors.index.json") << index.dump(2);
  return true;
}

/// This process's resident set now, in bytes (VmRSS).
long resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024L;
  }
  return 0;
}

/// Runs argv; its exit status, and its peak RSS in bytes in *peak.
int run_child(const std::vector<std::string>& args, long* peak) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror("execv");
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  *peak = usage.ru_maxrss * 1024L;  // kilobytes on Linux
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  std::string tessera, type = "f16";
  fs::path dir = fs::temp_directory_path() / "tessera-convert-rss";
  int shards = 3;
  bool keep = false;
  Shape shape;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "convert_rss: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--tessera") tessera = value();
    else if (a == "--dir") dir = value();
    else if (a == "--shards") shards = std::stoi(value());
    else if (a == "--layers") shape.layers = std::stoi(value());
    else if (a == "--type") type = value();
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr, "usage: %s --tessera PATH [--dir DIR] [--shards N] [--layers N] [--type T] [--keep]\n",
                   argv[0]);
      return 2;
    }
  }
  if (tessera.empty() || shards < 1) {
    std::fprintf(stderr, "convert_rss: --tessera PATH (the binary to measure) is required\n");
    return 2;
  }
  // The checkpoint is written by a child of its own: a process forked later (convert)
  // starts with its parent's resident pages counted in its peak, so this one stays small.
  int64_t largest = 0;
  for (const Tensor& t : tensors_of(shape)) largest = std::max(largest, t.elements() * 2);
  const pid_t writer = ::fork();
  if (writer == 0) {
    int64_t ignored = 0;
    ::_exit(write_checkpoint(dir / "hf", shape, shards, &ignored) ? 0 : 2);
  }
  int written = 0;
  ::waitpid(writer, &written, 0);
  if (!WIFEXITED(written) || WEXITSTATUS(written) != 0) return 2;
  const std::string out = (dir / "out.gguf").string();
  const auto t0 = std::chrono::steady_clock::now();
  // A forked child starts with this process's resident pages counted in its peak: keep them few.
  std::fprintf(stderr, "convert_rss: this process holds %.1f MiB before starting convert\n",
               double(resident_bytes()) / (1024.0 * 1024.0));
  long peak = 0;
  const int rc = run_child({tessera, "convert", (dir / "hf").string(), "-o", out, "--type", type}, &peak);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double mib = 1024.0 * 1024.0;
  const double bound = 2.0 * double(largest) + 200e6;
  std::printf("convert %s, %d shards, %lld layers: exit %d, %.1f s, peak RSS %.1f MiB; largest tensor %.1f MiB, "
              "bound 2x + 200 MB = %.1f MiB: %s\n",
              type.c_str(), shards, static_cast<long long>(shape.layers), rc, seconds, double(peak) / mib,
              double(largest) / mib, bound / mib, rc == 0 && double(peak) < bound ? "under" : "OVER");
  if (!keep) fs::remove_all(dir);
  return rc == 0 && double(peak) < bound ? 0 : 1;
}
