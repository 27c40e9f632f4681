// The settings of the requests the engine runs, by the engine's request id: what GET
// /slots shows as a busy slot's `params`. JobRun adds its requests when they are
// submitted and removes them when it ends.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "tessera/serving.h"

namespace tessera::server {

class RequestRegistry {
 public:
  /// Records `r` (its prompt left out) under the engine's id `id`.
  void add(uint64_t id, serving::GenerationRequest r) {
    r.prompt.clear();
    std::lock_guard<std::mutex> lock(mu_);
    requests_[id] = std::move(r);
  }
  void remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.erase(id);
  }
  /// The request of `id`, or nothing when no running job has it.
  std::optional<serving::GenerationRequest> find(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = requests_.find(id);
    if (it == requests_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, serving::GenerationRequest> requests_;
};

}  // namespace tessera::server
