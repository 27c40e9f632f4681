// The engine's queue: one entry per admission, first come first served. An admission is
// what one submit brought: a request alone, or a group of requests submitted together
// (a client's several prompts or inputs). An entry holds its requests not yet admitted,
// in order; it leaves the queue when the last of them is admitted or cancelled.
//
// Why a group is one entry, counted once against EngineParams::max_queue: the limit
// bounds how many clients wait ahead of a newcomer, and a group is one client waiting on
// one answer. Counting its parts would make a legal request (256 embedding inputs) larger
// than the queue itself and so always refused, and would let two clients' big groups fill
// the queue against everyone else's chats. What one entry may hold is bounded instead
// (Engine::kMaxGroup), so the queue's memory stays bounded.
//
// Not thread-safe: the engine guards it with its mutex.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

namespace tessera::serving {

struct Running;

class AdmissionQueue {
 public:
  AdmissionQueue();
  ~AdmissionQueue();
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  /// Admissions waiting: what max_queue bounds.
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  /// Adds one admission (not empty).
  void push(std::vector<std::unique_ptr<Running>> group);
  /// The next request to admit (the first of the oldest admission); null when empty.
  Running* front() const;
  /// Takes front() out of the queue.
  std::unique_ptr<Running> pop_front();
  /// Takes out every request whose stream was cancelled (every request when `all`);
  /// admissions left with no request leave the queue, so their places are free at once.
  std::vector<std::unique_ptr<Running>> take_cancelled(bool all);

 private:
  std::deque<std::deque<std::unique_ptr<Running>>> entries_;
};

}  // namespace tessera::serving
