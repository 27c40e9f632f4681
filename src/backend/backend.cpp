#include "backend/backend.h"

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

}  // namespace tessera
