#include "tessera/serving.h"

namespace tessera::serving {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "error";
}

std::vector<Event> Stream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (delivered_done_) return {};
  cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<Event> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  for (const Event& e : out) {
    if (e.kind == Event::Kind::Done) delivered_done_ = true;
  }
  return out;
}

void Stream::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
}

bool Stream::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool Stream::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Usage Stream::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return usage_;
}

std::vector<float> Stream::embedding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return embedding_;
}

std::vector<std::vector<float>> Stream::token_embeddings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return token_embeddings_;
}

void Stream::push(Event e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.kind == Event::Kind::Done) done_ = true;
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

void Stream::set_usage(const Usage& u) {
  std::lock_guard<std::mutex> lock(mu_);
  usage_ = u;
}

void Stream::set_embedding(std::vector<float> v) {
  std::lock_guard<std::mutex> lock(mu_);
  embedding_ = std::move(v);
}

void Stream::set_token_embeddings(std::vector<std::vector<float>> rows) {
  std::lock_guard<std::mutex> lock(mu_);
  token_embeddings_ = std::move(rows);
}

}  // namespace tessera::serving
