// Saving and restoring a context's state. File layout (host byte order, little-endian
// on every supported machine), version 2 (version 1 had one cache type for K and V):
//
//   "TESSTATE" magic, u32 version
//   model shape: string arch, i64 n_vocab n_embd n_layer n_ff n_head n_head_kv head_dim
//                n_rot, u64 n_params
//   cache: u32 key type, u32 value type, u64 key row bytes (a value row: the model's n_embd_v), i64 n_cells_saved, i32 max sequence id + 1,
//          u8 embeddings
//   sizes: i64 n_used (cells), i64 n_batch_tokens, i64 n_out, u64 user bytes
//   cells: n_used x (i32 index, i32 pos, i32 token, u64 sequences)
//   user data; outputs: i32 out_row[n_batch_tokens], f32 logits[n_out][n_vocab],
//          f32 embd[n_out][n_embd] (when embeddings)
//   per layer: the K rows, then the V rows, of the used cells in the cell order above
//   "TESSEND." end marker
//
// Everything before the cache data is read and checked (and the file size compared
// with what the header implies) before the context is touched.
//
// One sequence's state (save_seq_state), version 2:
//
//   "TESSSEQ." magic, u32 version, the model shape as above (string arch, 8 x i64,
//   u64 n_params), u32 key type, u32 value type, u64 key row bytes, i64 n_tokens
//   n_tokens x (i32 pos, i32 token), in position order
//   per layer: the K rows, then the V rows, of those cells; "TESSEND." end marker
//
// It is written to a temporary file beside `path` and renamed over it, so a crash
// never leaves a partial file under the final name.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

#include "runtime/context_impl.h"

namespace tessera {
namespace {

constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'T', 'A', 'T', 'E'};
constexpr char kEnd[8] = {'T', 'E', 'S', 'S', 'E', 'N', 'D', '.'};
constexpr uint32_t kVersion = 2;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

/// What a state file says about the model and the cache it came from.
struct Header {
  std::string arch;
  int64_t shape[8] = {};  // n_vocab n_embd n_layer n_ff n_head n_head_kv head_dim n_rot
  uint64_t n_params = 0;
  uint32_t type_k = 0, type_v = 0;  // the cache's types (DType ids)
  uint64_t row_bytes = 0;
  int64_t n_cells_saved = 0;
  int32_t n_seq = 0;
  uint8_t embeddings = 0;
  int64_t n_used = 0, n_batch_tokens = 0, n_out = 0;
  uint64_t user_bytes = 0;
};

constexpr const char* kShapeNames[8] = {"n_vocab", "n_embd", "n_layer", "n_ff",
                                        "n_head", "n_head_kv", "head_dim", "n_rot"};

Header header_of(const ContextImpl& c) {
  const HParams& h = c.m_.hparams;
  Header hd;
  hd.arch = h.arch;
  const int64_t shape[8] = {h.n_vocab, h.n_embd, h.n_layer, h.n_ff, h.n_head, h.n_head_kv, h.head_dim, h.n_rot};
  std::memcpy(hd.shape, shape, sizeof shape);
  hd.n_params = c.model_.info().n_params;
  hd.type_k = uint32_t(c.kv_->type_k());
  hd.type_v = uint32_t(c.kv_->type_v());
  hd.row_bytes = dtype_row_size(c.kv_->type_k(), h.n_embd_kv());
  hd.n_cells_saved = c.kv_->n_ctx();
  hd.embeddings = c.params_.embeddings ? 1 : 0;
  return hd;
}

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) {}
  void bytes(const void* p, size_t n) { ok_ = ok_ && (n == 0 || std::fwrite(p, 1, n, f_) == n); }
  template <typename T>
  void pod(const T& v) { bytes(&v, sizeof v); }
  bool ok() const { return ok_; }

 private:
  std::FILE* f_;
  bool ok_ = true;
};

class Reader {
 public:
  explicit Reader(std::FILE* f) : f_(f) {}
  bool bytes(void* p, size_t n) { return ok_ = ok_ && (n == 0 || std::fread(p, 1, n, f_) == n); }
  template <typename T>
  bool pod(T& v) { return bytes(&v, sizeof v); }
  bool ok() const { return ok_; }

 private:
  std::FILE* f_;
  bool ok_ = true;
};

/// What both state formats (a whole context, one sequence) start with: their magic and
/// version, then the model's architecture and shape and the cache's type and row size.
void write_model_part(Writer& w, const char (&magic)[8], uint32_t version, const Header& h) {
  w.bytes(magic, sizeof magic);
  w.pod(version);
  w.pod(uint32_t(h.arch.size()));
  w.bytes(h.arch.data(), h.arch.size());
  for (int64_t v : h.shape) w.pod(v);
  w.pod(h.n_params);
  w.pod(h.type_k);
  w.pod(h.type_v);
  w.pod(h.row_bytes);
}

/// Reads what write_model_part wrote; `what` names the format in messages.
Status read_model_part(Reader& r, const std::string& where, const char (&magic)[8], uint32_t version,
                       const std::string& what, Header& h) {
  char found[8];
  if (!r.bytes(found, sizeof found)) return Status::error(where + "is truncated (no header)");
  if (std::memcmp(found, magic, sizeof found) != 0) {
    return Status::error(where + "is not a tessera " + what + " file (bad magic)");
  }
  uint32_t file_version = 0;
  uint32_t arch_len = 0;
  if (!r.pod(file_version)) return Status::error(where + "is truncated (no version)");
  if (file_version != version) {
    return Status::error(where + "has " + what + " format version " + std::to_string(file_version) +
                         "; this build reads version " + std::to_string(version));
  }
  if (!r.pod(arch_len) || arch_len > 256) return Status::error(where + "has a bad header");
  h.arch.resize(arch_len);
  r.bytes(h.arch.data(), arch_len);
  for (int64_t& v : h.shape) r.pod(v);
  r.pod(h.n_params);
  r.pod(h.type_k);
  r.pod(h.type_v);
  r.pod(h.row_bytes);
  return Status::ok();
}

void write_header(Writer& w, const Header& h) {
  write_model_part(w, kMagic, kVersion, h);
  w.pod(h.n_cells_saved);
  w.pod(h.n_seq);
  w.pod(h.embeddings);
  w.pod(h.n_used);
  w.pod(h.n_batch_tokens);
  w.pod(h.n_out);
  w.pod(h.user_bytes);
}

std::vector<int32_t> used_cells(const KvCache& kv) {
  std::vector<int32_t> cells;
  for (int64_t i = 0; i < kv.n_ctx(); ++i) {
    if (!kv.cell(i).free()) cells.push_back(int32_t(i));
  }
  return cells;
}

/// Bytes one cell holds in the cache, all layers, keys and values (a value row may be
/// shorter than a key row: DeepSeek's MLA). The header's row_bytes is the key row's.
int64_t cell_bytes(const ContextImpl& c) {
  const HParams& h = c.m_.hparams;
  return h.n_layer *
         int64_t(dtype_row_size(c.kv_->type_k(), h.n_embd_kv()) + dtype_row_size(c.kv_->type_v(), h.n_embd_v()));
}

/// The cache rows of `cells` in every layer, K then V; `read` fills them from the file,
/// otherwise they are written to it.
bool transfer_rows(ContextImpl& c, const std::vector<int32_t>& cells, Writer* w, Reader* r) {
  for (const KvLayer& layer : c.kv_->layers()) {
    for (Tensor* t : {layer.k, layer.v}) {
      const size_t row = dtype_row_size(t->type, t->ne[0]);
      std::vector<char> buf(row);
      for (int32_t cell : cells) {
        const size_t offset = size_t(cell) * t->nb[1];
        if (w) {
          t->buffer->backend().get_tensor(t, buf.data(), offset, row);
          w->bytes(buf.data(), row);
        } else {
          if (!r->bytes(buf.data(), row)) return false;
          t->buffer->backend().set_tensor(t, buf.data(), offset, row);
        }
      }
    }
  }
  return w ? w->ok() : r->ok();
}

/// What load_state has read and checked before it touches the context.
struct Loaded {
  Header h;
  std::vector<KvCell> cells;       // by index below
  std::vector<int32_t> cell_index;
  std::vector<uint8_t> user;
  std::vector<int32_t> out_row;
  std::vector<float> logits, embd;
};

Status read_header(Reader& r, const std::string& where, Header& h) {
  TESSERA_RETURN_IF_ERROR(read_model_part(r, where, kMagic, kVersion, "state", h));
  r.pod(h.n_cells_saved);
  r.pod(h.n_seq);
  r.pod(h.embeddings);
  r.pod(h.n_used);
  r.pod(h.n_batch_tokens);
  r.pod(h.n_out);
  r.pod(h.user_bytes);
  return r.ok() ? Status::ok() : Status::error(where + "is truncated (inside the header)");
}

/// The file's model and cache type against this context's.
Status check_model(const Header& f, const Header& mine, const std::string& where) {
  if (f.arch != mine.arch) {
    return Status::error(where + "was saved from a '" + f.arch + "' model, this one is '" + mine.arch + "'");
  }
  for (int i = 0; i < 8; ++i) {
    if (f.shape[i] != mine.shape[i]) {
      return Status::error(where + "was saved from another model: " + kShapeNames[i] + " " +
                           std::to_string(f.shape[i]) + " in the file, " + std::to_string(mine.shape[i]) + " here");
    }
  }
  if (f.n_params != mine.n_params) return Status::error(where + "was saved from another model (parameter count differs)");
  if (f.type_k != mine.type_k || f.type_v != mine.type_v || f.row_bytes != mine.row_bytes) {
    auto name = [](uint32_t id) { return is_known_dtype(id) ? std::string(dtype_name(DType(id))) : "type " + std::to_string(id); };
    return Status::error(where + "holds a cache of other types (keys " + name(f.type_k) + ", values " +
                         name(f.type_v) + "); this context's are keys " + name(mine.type_k) + ", values " +
                         name(mine.type_v) + " (type_k/type_v, -ctk/-ctv)");
  }
  return Status::ok();
}

/// The file's model, cache and sizes against this context's.
Status check_header(const Header& f, const Header& mine, const ContextImpl& c, const std::string& where) {
  TESSERA_RETURN_IF_ERROR(check_model(f, mine, where));
  if (f.embeddings != mine.embeddings) {
    return Status::error(where + "was saved with embeddings " + (f.embeddings ? "on" : "off") +
                         "; this context has them " + (mine.embeddings ? "on" : "off"));
  }
  if (f.n_used < 0 || f.n_used > c.kv_->n_ctx()) {
    return Status::error(where + "holds " + std::to_string(f.n_used) + " cells; this context has " +
                         std::to_string(c.kv_->n_ctx()));
  }
  if (f.n_seq < 0 || f.n_seq > c.params_.n_seq_max) {
    return Status::error(where + "uses " + std::to_string(f.n_seq) + " sequences; this context has n_seq_max " +
                         std::to_string(c.params_.n_seq_max));
  }
  return Status::ok();
}

/// Bytes the file must have after the header, from the header's counts (or -1 when
/// the counts are absurd for a file of `file_size` bytes).
int64_t body_size(const Header& h, int64_t file_size, int64_t bytes_per_cell) {
  const int64_t limit = file_size / 4 + 1;
  if (h.n_batch_tokens < 0 || h.n_batch_tokens > limit || h.n_out < 0 || h.n_out > h.n_batch_tokens ||
      h.user_bytes > uint64_t(file_size)) {
    return -1;
  }
  const int64_t cell_record = 3 * 4 + 8;
  const int64_t outputs = h.n_batch_tokens * 4 + h.n_out * h.shape[0] * 4 +
                          (h.embeddings ? h.n_out * h.shape[1] * 4 : 0);
  return h.n_used * cell_record + int64_t(h.user_bytes) + outputs +
         h.n_used * bytes_per_cell + int64_t(sizeof kEnd);
}

Status read_cells(Reader& r, const ContextImpl& c, Loaded& l, const std::string& where) {
  std::vector<bool> taken(size_t(c.kv_->n_ctx()), false);
  const SeqMask allowed = c.params_.n_seq_max == kMaxSeq ? ~SeqMask{0} : seq_bit(c.params_.n_seq_max) - 1;
  for (int64_t i = 0; i < l.h.n_used; ++i) {
    int32_t index = 0;
    KvCell cell;
    r.pod(index);
    r.pod(cell.pos);
    r.pod(cell.token);
    r.pod(cell.seqs);
    if (!r.ok()) return Status::error(where + "is truncated (in the cells)");
    const bool bad = index < 0 || index >= c.kv_->n_ctx() || taken[size_t(index)] || cell.pos < 0 ||
                     cell.seqs == 0 || (cell.seqs & ~allowed) != 0 || cell.token < 0 ||
                     cell.token >= c.m_.hparams.n_vocab;
    if (bad) return Status::error(where + "has a bad cell record (" + std::to_string(i) + ")");
    taken[size_t(index)] = true;
    l.cell_index.push_back(index);
    l.cells.push_back(cell);
  }
  return Status::ok();
}

Status read_outputs(Reader& r, Loaded& l, const std::string& where) {
  l.user.resize(l.h.user_bytes);
  l.out_row.resize(size_t(l.h.n_batch_tokens));
  l.logits.resize(size_t(l.h.n_out * l.h.shape[0]));
  l.embd.resize(l.h.embeddings ? size_t(l.h.n_out * l.h.shape[1]) : 0);
  r.bytes(l.user.data(), l.user.size());
  r.bytes(l.out_row.data(), l.out_row.size() * sizeof(int32_t));
  r.bytes(l.logits.data(), l.logits.size() * sizeof(float));
  r.bytes(l.embd.data(), l.embd.size() * sizeof(float));
  if (!r.ok()) return Status::error(where + "is truncated (in the outputs)");
  int32_t next = 0;  // output rows are numbered in batch order
  for (int32_t row : l.out_row) {
    if (row != -1 && row != next) return Status::error(where + "has a bad output table");
    if (row == next) ++next;
  }
  if (next != l.h.n_out) return Status::error(where + "has a bad output table");
  return Status::ok();
}

}  // namespace

namespace {
// Each rank holds only its layers' keys and values; a state file of the whole cache would
// need them gathered on rank 0 (not built yet).
Status refuse_across_ranks(const ContextImpl& c, const char* what) {
  if (c.mpi_id_ < 0) return Status::ok();
  return Status::error(std::string(what) + ": not available for a model split across MPI ranks "
                       "(each rank holds only its own layers' cache)");
}

/// The state file holds the last decode's logits, which an encoder does not compute.
Status refuse_encoder(const ContextImpl& c, const char* what) {
  if (c.m_.weights.variant.logits) return Status::ok();
  return Status::error(std::string(what) + ": not available for an encoder (" + c.m_.hparams.arch +
                       "): the state holds logits, which it has none of");
}
}  // namespace

Status Context::save_state(const std::string& path, std::span<const uint8_t> user_data) {
  ContextImpl& c = *impl_;
  TESSERA_RETURN_IF_ERROR(refuse_across_ranks(c, "save_state"));
  TESSERA_RETURN_IF_ERROR(refuse_encoder(c, "save_state"));
  TESSERA_RETURN_IF_ERROR(c.shift_.apply(*c.kv_));  // keys at their final positions
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) return Status::error("state: cannot write '" + path + "': " + std::strerror(errno));
  const std::vector<int32_t> cells = used_cells(*c.kv_);
  Header h = header_of(c);
  for (int32_t cell : cells) {
    for (int s = 0; s < kMaxSeq; ++s) {
      if (c.kv_->cell(cell).seqs & seq_bit(s)) h.n_seq = std::max(h.n_seq, s + 1);
    }
  }
  h.n_used = int64_t(cells.size());
  h.n_batch_tokens = int64_t(c.out_row_.size());
  h.n_out = c.n_out_;
  h.user_bytes = user_data.size();

  Writer w(f.get());
  write_header(w, h);
  for (int32_t cell : cells) {
    const KvCell& kc = c.kv_->cell(cell);
    w.pod(cell);
    w.pod(kc.pos);
    w.pod(kc.token);
    w.pod(kc.seqs);
  }
  w.bytes(user_data.data(), user_data.size());
  w.bytes(c.out_row_.data(), c.out_row_.size() * sizeof(int32_t));
  w.bytes(c.logits_.data(), size_t(c.n_out_ * h.shape[0]) * sizeof(float));
  if (h.embeddings) w.bytes(c.embd_.data(), size_t(c.n_out_ * h.shape[1]) * sizeof(float));
  transfer_rows(c, cells, &w, nullptr);
  w.bytes(kEnd, sizeof kEnd);
  if (!w.ok() || std::fflush(f.get()) != 0) {
    return Status::error("state: writing '" + path + "' failed: " + std::strerror(errno));
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> Context::load_state(const std::string& path) {
  ContextImpl& c = *impl_;
  TESSERA_RETURN_IF_ERROR(refuse_across_ranks(c, "load_state"));
  TESSERA_RETURN_IF_ERROR(refuse_encoder(c, "load_state"));
  const std::string where = "state: '" + path + "' ";
  std::error_code ec;
  const int64_t file_size = int64_t(std::filesystem::file_size(path, ec));
  File f(ec ? nullptr : std::fopen(path.c_str(), "rb"));
  if (!f) return Status::error("state: cannot read '" + path + "'");
  Reader r(f.get());
  Loaded l;
  TESSERA_RETURN_IF_ERROR(read_header(r, where, l.h));
  TESSERA_RETURN_IF_ERROR(check_header(l.h, header_of(c), c, where));
  const int64_t body = body_size(l.h, file_size, cell_bytes(c));
  const int64_t have = file_size - int64_t(std::ftell(f.get()));
  if (body < 0) return Status::error(where + "has a bad header (impossible sizes)");
  if (have < body) {
    return Status::error(where + "is truncated: " + std::to_string(file_size) + " bytes, the header implies " +
                         std::to_string(file_size - have + body));
  }
  if (have > body) return Status::error(where + "has " + std::to_string(have - body) + " bytes of trailing data");
  TESSERA_RETURN_IF_ERROR(read_cells(r, c, l, where));
  TESSERA_RETURN_IF_ERROR(read_outputs(r, l, where));

  // Checked: now replace the context's state.
  c.clear();
  for (size_t i = 0; i < l.cells.size(); ++i) c.kv_->set_cell(l.cell_index[i], l.cells[i]);
  char end[sizeof kEnd];
  if (!transfer_rows(c, l.cell_index, nullptr, &r) || !r.bytes(end, sizeof end) ||
      std::memcmp(end, kEnd, sizeof end) != 0) {
    c.clear();
    return Status::error(where + "is damaged (cache data or end marker); the context was cleared");
  }
  c.out_row_ = std::move(l.out_row);
  c.logits_ = std::move(l.logits);
  c.embd_ = std::move(l.embd);
  c.n_out_ = l.h.n_out;
  return std::move(l.user);
}

namespace {

constexpr char kSeqMagic[8] = {'T', 'E', 'S', 'S', 'S', 'E', 'Q', '.'};
constexpr uint32_t kSeqVersion = 2;

void write_seq_header(Writer& w, const Header& h, int64_t n_tokens) {
  write_model_part(w, kSeqMagic, kSeqVersion, h);
  w.pod(n_tokens);
}

Status read_seq_header(Reader& r, const std::string& where, Header& h, int64_t& n_tokens) {
  TESSERA_RETURN_IF_ERROR(read_model_part(r, where, kSeqMagic, kSeqVersion, "sequence state", h));
  r.pod(n_tokens);
  return r.ok() ? Status::ok() : Status::error(where + "is truncated (inside the header)");
}

/// The cells of `seq` in position order.
std::vector<int32_t> seq_cells(const KvCache& kv, SeqId seq) {
  std::vector<int32_t> cells;
  for (int64_t i = 0; i < kv.n_ctx(); ++i) {
    if (kv.cell(i).seqs & seq_bit(seq)) cells.push_back(int32_t(i));
  }
  std::sort(cells.begin(), cells.end(), [&](int32_t a, int32_t b) { return kv.cell(a).pos < kv.cell(b).pos; });
  return cells;
}

/// The (pos, token) records of a sequence file, checked: positions increasing, tokens in
/// the vocabulary.
Status read_seq_records(Reader& r, const ContextImpl& c, int64_t n, std::vector<KvCell>& out,
                        const std::string& where) {
  for (int64_t i = 0; i < n; ++i) {
    KvCell cell;
    r.pod(cell.pos);
    r.pod(cell.token);
    if (!r.ok()) return Status::error(where + "is truncated (in the tokens)");
    if (cell.pos < 0 || (i > 0 && cell.pos <= out.back().pos) || cell.token < 0 ||
        cell.token >= c.m_.hparams.n_vocab) {
      return Status::error(where + "has a bad token record (" + std::to_string(i) + ")");
    }
    out.push_back(cell);
  }
  return Status::ok();
}

}  // namespace

Result<SeqStateInfo> Context::save_seq_state(SeqId seq, const std::string& path) {
  ContextImpl& c = *impl_;
  TESSERA_RETURN_IF_ERROR(refuse_across_ranks(c, "save_seq_state"));
  TESSERA_RETURN_IF_ERROR(c.check_seq("save_seq_state", seq, false));
  TESSERA_RETURN_IF_ERROR(c.shift_.apply(*c.kv_));  // keys at their final positions
  const std::vector<int32_t> cells = seq_cells(*c.kv_, seq);
  const Header h = header_of(c);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  File f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return Status::error("state: cannot write '" + tmp + "': " + std::strerror(errno));
  Writer w(f.get());
  write_seq_header(w, h, int64_t(cells.size()));
  for (int32_t cell : cells) {
    w.pod(c.kv_->cell(cell).pos);
    w.pod(c.kv_->cell(cell).token);
  }
  transfer_rows(c, cells, &w, nullptr);
  w.bytes(kEnd, sizeof kEnd);
  const bool written = w.ok() && std::fflush(f.get()) == 0 && ::fsync(::fileno(f.get())) == 0;
  const int err = errno;
  const int64_t n_bytes = written ? int64_t(std::ftell(f.get())) : 0;
  f.reset();
  std::error_code ec;
  if (written) std::filesystem::rename(tmp, path, ec);
  if (!written || ec) {
    const std::string why = written ? ec.message() : std::string(std::strerror(err));
    std::filesystem::remove(tmp, ec);
    return Status::error("state: writing '" + path + "' failed: " + why);
  }
  return SeqStateInfo{int64_t(cells.size()), n_bytes};
}

Result<SeqStateInfo> Context::load_seq_state(const std::string& path, SeqId dst) {
  ContextImpl& c = *impl_;
  TESSERA_RETURN_IF_ERROR(refuse_across_ranks(c, "load_seq_state"));
  TESSERA_RETURN_IF_ERROR(c.check_seq("load_seq_state", dst, false));
  const std::string where = "state: '" + path + "' ";
  std::error_code ec;
  const int64_t file_size = int64_t(std::filesystem::file_size(path, ec));
  File f(ec ? nullptr : std::fopen(path.c_str(), "rb"));
  if (!f) return Status::error("state: cannot read '" + path + "'");
  Reader r(f.get());
  Header h;
  int64_t n = 0;
  TESSERA_RETURN_IF_ERROR(read_seq_header(r, where, h, n));
  TESSERA_RETURN_IF_ERROR(check_model(h, header_of(c), where));
  if (n < 0 || n > c.kv_->n_ctx()) {
    return Status::error(where + "holds " + std::to_string(n) + " tokens; this context has " +
                         std::to_string(c.kv_->n_ctx()) + " cells");
  }
  const int64_t body = n * 8 + n * cell_bytes(c) + int64_t(sizeof kEnd);
  const int64_t have = file_size - int64_t(std::ftell(f.get()));
  if (have < body) {
    return Status::error(where + "is truncated: " + std::to_string(file_size) + " bytes, the header implies " +
                         std::to_string(file_size - have + body));
  }
  if (have > body) return Status::error(where + "has " + std::to_string(have - body) + " bytes of trailing data");
  std::vector<KvCell> records;
  TESSERA_RETURN_IF_ERROR(read_seq_records(r, c, n, records, where));
  if (c.kv_->seq_pos_max(dst) >= 0) {
    return Status::error("load_seq_state: sequence " + std::to_string(dst) + " is not empty");
  }
  const std::vector<SeqMask> masks(size_t(n), seq_bit(dst));
  Result<std::vector<int32_t>> cells = c.kv_->find_slots(masks);
  if (!cells) return Status::error(where + "does not fit: " + cells.status().message());
  for (size_t i = 0; i < records.size(); ++i) {
    c.kv_->store((*cells)[i], records[i].pos, seq_bit(dst), records[i].token);
  }
  char end[sizeof kEnd];
  if (!transfer_rows(c, *cells, nullptr, &r) || !r.bytes(end, sizeof end) ||
      std::memcmp(end, kEnd, sizeof end) != 0) {
    c.kv_->seq_rm(dst, -1, -1);
    return Status::error(where + "is damaged (cache data or end marker)");
  }
  return SeqStateInfo{n, file_size};
}

}  // namespace tessera
