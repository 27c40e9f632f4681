#include "backend/backend.h"

#include <string>
#include <vector>

#include "core/check.h"

namespace tessera {

void Buffer::place(Tensor* t, size_t offset) {
  TESSERA_CHECK(offset % alignment() == 0 || t->view_src != nullptr);
  TESSERA_CHECK(offset + t->nbytes() <= size());
  t->data = static_cast<char*>(base()) + offset;
  t->buffer = this;
  init_tensor(t);
}

void Backend::copy_tensor_from(const Tensor* src, Tensor* dst) {
  TESSERA_CHECK(src->type == dst->type && src->same_shape(*dst));
  TESSERA_CHECK(src->is_contiguous() && dst->is_contiguous());
  if (src->buffer == nullptr || src->buffer->backend().host_memory()) {  // host memory: read in place
    TESSERA_CHECK(src->data != nullptr);
    set_tensor(dst, src->data, 0, src->nbytes());
    return;
  }
  std::vector<char> staging(src->nbytes());
  src->buffer->backend().get_tensor(src, staging.data(), 0, staging.size());
  set_tensor(dst, staging.data(), 0, staging.size());
}

namespace {
Status no_transfers(const Backend& b) {
  return Status::error(std::string(b.name()) + ": a backend of this process has no transfers between processes");
}
}  // namespace

void apply_graph_memory(const AllocPlan& plan, const Graph& graph, Buffer& buffer) {
  TESSERA_CHECK(buffer.size() >= plan.size);
  for (const auto& [t, offset] : plan.offsets) buffer.place(t, offset);
  // Views in node order: a view's source (or the source's source) is placed before it.
  for (Tensor* node : graph.nodes()) {
    if (node->view_src == nullptr) continue;
    TESSERA_CHECK_MSG(node->view_src->data != nullptr, "view of a tensor without memory");
    node->data = static_cast<char*>(node->view_src->data) + node->view_offset;
    node->buffer = node->view_src->buffer;
  }
}

Status Backend::send_tensor(const Tensor*) { return no_transfers(*this); }
Status Backend::receive_tensor(Tensor*) { return no_transfers(*this); }
Status Backend::send_result(const void*, size_t) { return no_transfers(*this); }
Status Backend::receive_result_async(void*, size_t) { return no_transfers(*this); }

}  // namespace tessera
