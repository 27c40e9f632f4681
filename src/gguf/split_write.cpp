// Writing split models and merging them back (gguf_split.h). The layout is the one the
// reference engine's gguf-split writes: the first part holds the input's metadata, then
// in every part the keys split.no, split.tensors.count and split.count in that order (the
// reference appends them in that order), each tensor padded with zeros to the alignment.
// The last part (and a merged file) ends padded as the input did, so that merging the
// parts of a file gives that file back byte for byte.
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>

#include "tessera/gguf.h"
#include "tessera/gguf_split.h"

namespace tessera::gguf {
namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Tensor data goes to the writer in pieces of this size, so progress moves within large
// tensors too.
constexpr size_t kChunk = size_t(64) << 20;

// True when the input's tensor data ends padded to the alignment (ggml's writer pads
// after the last tensor; tessera's writer does not by default).
bool ends_padded(const File& in) {
  if (in.tensors().empty()) return false;
  const TensorInfo& last = in.tensors().back();
  const File& part = in.part(size_t(last.part));
  return part.file_size() > part.data_offset() + last.offset + last.nbytes;
}

// Adds tensor `t` to `w`, streamed from its mapping, reporting progress.
void add_streamed(Writer& w, const TensorInfo& t, const std::string& file, uint64_t* done, uint64_t total,
                  const SplitProgress& progress) {
  w.add_tensor_stream(t.name, t.type, t.ne, t.n_dims, t.nbytes,
                      [&t, file, done, total, &progress](const Writer::ByteSink& out) {
                        for (uint64_t at = 0; at < t.nbytes; at += kChunk) {
                          const size_t n = size_t(std::min<uint64_t>(kChunk, t.nbytes - at));
                          if (!out(t.data + at, n)) return Status::ok();  // the writer reports it
                          *done += n;
                          if (progress) progress(file, *done, total);
                        }
                        return Status::ok();
                      });
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

// Refuses an output path that is one of the input's files (it is mapped while written).
Status check_not_input(const File& in, const std::string& out) {
  for (size_t i = 0; i < in.part_count(); ++i) {
    if (same_file(in.part(i).path(), out)) {
      return Status::error("gguf-split: output " + out + " is the input file " + in.part(i).path());
    }
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<SplitPart>> plan_split(const File& in, const std::string& out_prefix, const SplitOptions& options) {
  if (options.max_bytes == 0 && options.max_tensors < 1) {
    return Status::error("gguf-split: the number of tensors per part must be at least 1");
  }
  std::vector<SplitPart> parts(1);
  if (options.no_tensor_first_split) parts.emplace_back();
  uint64_t bytes = 0;  // tensor bytes of the current part, padded
  const std::vector<TensorInfo>& tensors = in.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t padded = align_up(tensors[i].nbytes, in.alignment());
    const bool full = options.max_bytes > 0 ? bytes + padded > options.max_bytes
                                            : i % size_t(options.max_tensors) == 0;
    if (!parts.back().tensors.empty() && full) {
      parts.emplace_back();
      bytes = 0;
    }
    parts.back().tensors.push_back(i);
    parts.back().tensor_bytes += padded;
    bytes += padded;
  }
  if (parts.size() > 65535) {
    return Status::error("gguf-split: " + std::to_string(parts.size()) + " parts, more than the 65535 split.count holds");
  }
  if (tensors.size() > size_t(INT32_MAX)) return Status::error("gguf-split: too many tensors for split.tensors.count");
  for (size_t p = 0; p < parts.size(); ++p) parts[p].path = split_part_path(out_prefix, int(p), int(parts.size()));
  return parts;
}

Status write_split(const File& in, const std::vector<SplitPart>& plan, const SplitProgress& progress) {
  for (const SplitPart& part : plan) TESSERA_RETURN_IF_ERROR(check_not_input(in, part.path));
  uint64_t total = 0;
  for (const SplitPart& part : plan) {
    for (size_t i : part.tensors) total += in.tensors()[i].nbytes;
  }
  uint64_t done = 0;
  const bool pad_last = ends_padded(in);
  for (size_t p = 0; p < plan.size(); ++p) {
    Writer w;
    if (p == 0) {
      for (const auto& [key, value] : in.metadata()) {
        if (!is_split_key(key)) w.set(key, value);
      }
    }
    if (w.alignment() != in.alignment()) w.set_alignment(in.alignment());
    w.set(std::string(kSplitNoKey), Value(uint16_t(p)));
    w.set(std::string(kSplitTensorsKey), Value(int32_t(in.tensors().size())));
    w.set(std::string(kSplitCountKey), Value(uint16_t(plan.size())));
    w.set_pad_end(p + 1 < plan.size() || pad_last);
    for (size_t i : plan[p].tensors) add_streamed(w, in.tensors()[i], plan[p].path, &done, total, progress);
    if (Status s = w.write(plan[p].path); !s) {
      for (size_t q = 0; q < p; ++q) std::filesystem::remove(plan[q].path);
      return s;
    }
  }
  return Status::ok();
}

Status merge_gguf(const std::string& first, const std::string& out, const SplitProgress& progress) {
  {
    Result<std::unique_ptr<File>> raw = File::open(first);
    if (!raw) return raw.status();
    if ((*raw)->find(kSplitCountKey) == nullptr) {
      return Status::error("gguf-split: " + first + " is not part of a split model (no key '" +
                           std::string(kSplitCountKey) + "')");
    }
  }
  Result<std::unique_ptr<File>> opened = File::open_model(first);
  if (!opened) return opened.status();
  const File& in = **opened;
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) return Status::error("gguf-split: output file " + out + " already exists");
  uint64_t total = 0;
  for (const TensorInfo& t : in.tensors()) total += t.nbytes;
  uint64_t done = 0;
  Writer w;
  for (const auto& [key, value] : in.metadata()) w.set(key, value);  // split keys already gone
  if (w.alignment() != in.alignment()) w.set_alignment(in.alignment());
  w.set_pad_end(ends_padded(in));
  for (const TensorInfo& t : in.tensors()) add_streamed(w, t, out, &done, total, progress);
  return w.write(out);
}

}  // namespace tessera::gguf
