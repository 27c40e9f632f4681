// The serving engine's admission queue without a model: one entry per submission, its
// requests in order, and cancelled requests taken out with their places.
#include <gtest/gtest.h>

#include "serving/admission_queue.h"
#include "serving/engine_impl.h"

namespace tessera::serving {
namespace {

/// Requests with consecutive stream ids from `first`.
std::vector<std::unique_ptr<Running>> requests(uint64_t first, size_t n) {
  std::vector<std::unique_ptr<Running>> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(std::make_unique<Running>());
    out.back()->stream = std::make_shared<Stream>(first + i);
  }
  return out;
}

TEST(AdmissionQueue, AGroupIsOneEntryAdmittedInOrder) {
  AdmissionQueue q;
  EXPECT_EQ(q.front(), nullptr);
  q.push(requests(1, 256));
  q.push(requests(1000, 1));
  EXPECT_EQ(q.size(), 2u);  // what max_queue counts
  for (uint64_t id = 1; id <= 256; ++id) {
    ASSERT_EQ(q.front()->stream->id(), id);
    EXPECT_EQ(q.size(), 2u);  // the group keeps its place until its last request goes
    EXPECT_EQ(q.pop_front()->stream->id(), id);
  }
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.pop_front()->stream->id(), 1000u);
  EXPECT_TRUE(q.empty());
}

TEST(AdmissionQueue, CancelledRequestsLeaveWithTheirPlaces) {
  AdmissionQueue q;
  std::vector<std::unique_ptr<Running>> group = requests(1, 3);
  std::vector<std::shared_ptr<Stream>> streams;
  for (const auto& r : group) streams.push_back(r->stream);
  q.push(std::move(group));
  q.push(requests(10, 1));
  streams[1]->cancel();  // part of a group: the group keeps its place
  std::vector<std::unique_ptr<Running>> gone = q.take_cancelled(false);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]->stream->id(), 2u);
  EXPECT_EQ(q.size(), 2u);
  streams[0]->cancel();
  streams[2]->cancel();  // the whole group: its place is free
  EXPECT_EQ(q.take_cancelled(false).size(), 2u);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.front()->stream->id(), 10u);
  EXPECT_EQ(q.take_cancelled(true).size(), 1u);  // shutdown: everything
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace tessera::serving
