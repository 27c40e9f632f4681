#include "serving/admission_queue.h"

#include <algorithm>
#include <iterator>

#include "core/check.h"
#include "serving/engine_impl.h"

namespace tessera::serving {

AdmissionQueue::AdmissionQueue() = default;
AdmissionQueue::~AdmissionQueue() = default;

void AdmissionQueue::push(std::vector<std::unique_ptr<Running>> group) {
  TESSERA_CHECK(!group.empty());
  entries_.emplace_back(std::make_move_iterator(group.begin()), std::make_move_iterator(group.end()));
}

Running* AdmissionQueue::front() const { return entries_.empty() ? nullptr : entries_.front().front().get(); }

std::unique_ptr<Running> AdmissionQueue::pop_front() {
  TESSERA_CHECK(!entries_.empty());
  std::unique_ptr<Running> r = std::move(entries_.front().front());
  entries_.front().pop_front();
  if (entries_.front().empty()) entries_.pop_front();
  return r;
}

std::vector<std::unique_ptr<Running>> AdmissionQueue::take_cancelled(bool all) {
  std::vector<std::unique_ptr<Running>> out;
  for (auto entry = entries_.begin(); entry != entries_.end();) {
    const auto gone = std::stable_partition(entry->begin(), entry->end(), [&](const std::unique_ptr<Running>& r) {
      return !all && !r->stream->cancelled();
    });
    std::move(gone, entry->end(), std::back_inserter(out));
    entry->erase(gone, entry->end());
    entry = entry->empty() ? entries_.erase(entry) : entry + 1;
  }
  return out;
}

}  // namespace tessera::serving
