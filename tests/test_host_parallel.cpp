// host_parallel_for: every index exactly once, in contiguous ranges, on short-lived
// threads that are gone when it returns; an exception in any range reaches the caller.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "engine/base/host_parallel.h"

using namespace decodelab;

TEST_CASE("host_parallel_for covers every index once, in contiguous ranges", "[host_parallel]") {
  for (int64_t count : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    std::atomic<int64_t> ranges{0};
    host_parallel_for(count, 64, [&](int64_t begin, int64_t end) {
      REQUIRE(begin <= end);
      ++ranges;
      for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (const auto& hit : hits) REQUIRE(hit.load() == 1);
    CHECK(ranges.load() >= 1);
    CHECK(ranges.load() <= std::max<int64_t>(1, count / 64));
  }
}

TEST_CASE("host_parallel_for rethrows a range's exception after every range finished", "[host_parallel]") {
  std::atomic<int> finished{0};
  auto run = [&] {
    host_parallel_for(1 << 20, 1, [&](int64_t begin, int64_t) {
      if (begin == 0) throw std::runtime_error("first range failed");
      ++finished;
    });
  };
  CHECK_THROWS_WITH(run(), "first range failed");
  CHECK(finished.load() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) - 1);
}
