// The prefetch ring: order across passes, the producer running ahead, the depth bound, errors from the producer,
// restart and shutdown in the middle of a pass.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dnmf/error.hpp"
#include "stream/ring.hpp"

namespace dnmf::stream {
namespace {

using namespace std::chrono_literals;

struct Slot {
  std::size_t tile = 0;
  int fills = 0;
};

std::vector<Slot> slots(std::size_t depth) { return std::vector<Slot>(depth); }

TEST(Ring, DeliversTilesInOrderPassAfterPass) {
  Ring<Slot> ring(slots(3), 5, [](std::size_t t, Slot& s) {
    s.tile = t;
    ++s.fills;
  });
  for (int pass = 0; pass < 4; ++pass)
    for (std::size_t t = 0; t < 5; ++t) {
      EXPECT_EQ(ring.next_tile(), t);
      EXPECT_EQ(ring.acquire().tile, t);
      ring.release();
    }
  EXPECT_EQ(ring.stats().tiles_delivered, 20);
}

TEST(Ring, ProducerStaysWithinDepth) {
  std::atomic<long long> released{0};
  std::atomic<long long> max_ahead{0};
  std::atomic<long long> filled{0};
  const std::size_t depth = 3;
  Ring<Slot> ring(slots(depth), 7, [&](std::size_t t, Slot& s) {
    s.tile = t;
    const long long ahead = filled.load() - released.load();
    long long seen = max_ahead.load();
    while (ahead > seen && !max_ahead.compare_exchange_weak(seen, ahead)) {
    }
    ++filled;
  });
  for (int i = 0; i < 30; ++i) {
    (void)ring.acquire();
    std::this_thread::sleep_for(1ms);  // give the producer every chance to run too far ahead
    ring.release();
    ++released;
  }
  // When tile s is being filled, at most depth - 1 filled tiles are not yet released (plus the one held).
  EXPECT_LE(max_ahead.load(), static_cast<long long>(depth));
}

TEST(Ring, ASlowConsumerNeverWaitsAfterTheFirstTile) {
  // Fills take 5 ms, computing on a tile 20 ms: once started, the producer is always ahead. Without the
  // overlap the 12 tiles after the first would wait 60 ms in all.
  Ring<Slot> ring(slots(2), 4, [](std::size_t t, Slot& s) {
    std::this_thread::sleep_for(5ms);
    s.tile = t;
  });
  (void)ring.acquire();
  ring.release();
  const double after_first = ring.stats().seconds_waiting;
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(20ms);
    (void)ring.acquire();
    ring.release();
  }
  EXPECT_LT(ring.stats().seconds_waiting - after_first, 0.030);
  EXPECT_GT(ring.stats().seconds_filling, 12 * 0.005);
}

TEST(Ring, AFastConsumerWaitsForTheProducer) {
  Ring<Slot> ring(slots(2), 3, [](std::size_t t, Slot& s) {
    std::this_thread::sleep_for(5ms);
    s.tile = t;
  });
  for (int i = 0; i < 6; ++i) {
    (void)ring.acquire();
    ring.release();
  }
  EXPECT_GT(ring.stats().seconds_waiting, 6 * 0.004);
}

TEST(Ring, ProducerExceptionReachesTheConsumerWithItsMessage) {
  Ring<Slot> ring(slots(2), 5, [](std::size_t t, Slot& s) {
    if (t == 3) throw Error("disk.npy: read failed at tile 3");
    s.tile = t;
  });
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(ring.acquire().tile, t);
    ring.release();
  }
  try {
    (void)ring.acquire();
    FAIL() << "expected the producer's error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "disk.npy: read failed at tile 3");
  }
  // It stays failed: the same error again, not a hang.
  EXPECT_THROW((void)ring.acquire(), Error);
}

TEST(Ring, NonDnmfExceptionsPassThroughToo) {
  Ring<Slot> ring(slots(2), 2, [](std::size_t, Slot&) { throw std::runtime_error("boom"); });
  EXPECT_THROW((void)ring.acquire(), std::runtime_error);
}

TEST(Ring, RestartMidPassBeginsAgainAtTileZero) {
  std::atomic<bool> fail_once{true};
  Ring<Slot> ring(slots(3), 6, [&](std::size_t t, Slot& s) {
    if (t == 4 && fail_once.exchange(false)) throw Error("transient");
    s.tile = t;
  });
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(ring.acquire().tile, t);
    ring.release();
  }
  (void)ring.acquire();  // holding tile 2 when the pass is abandoned, once the producer has failed on tile 4
  for (int i = 0; i < 2000 && fail_once.load(); ++i) std::this_thread::sleep_for(1ms);
  ASSERT_FALSE(fail_once.load());
  ring.restart();
  for (std::size_t t = 0; t < 6; ++t) {  // tile 4 failed while we were away; the restart cleared it
    EXPECT_EQ(ring.acquire().tile, t);
    ring.release();
  }
}

TEST(Ring, ShutdownMidPassDoesNotHang) {
  // The producer is blocked on a full ring (consumer gone) or inside a slow fill: destruction must return.
  const auto start = std::chrono::steady_clock::now();
  {
    Ring<Slot> ring(slots(2), 100, [](std::size_t t, Slot& s) { s.tile = t; });
    (void)ring.acquire();
    std::this_thread::sleep_for(5ms);
  }
  {
    Ring<Slot> ring(slots(2), 100, [](std::size_t t, Slot& s) {
      std::this_thread::sleep_for(20ms);
      s.tile = t;
    });
    (void)ring.acquire();
    ring.release();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
}

TEST(Ring, RejectsMisuse) {
  Ring<Slot> ring(slots(2), 2, [](std::size_t t, Slot& s) { s.tile = t; });
  EXPECT_THROW(ring.release(), Error);
  (void)ring.acquire();
  EXPECT_THROW((void)ring.acquire(), Error);
  EXPECT_THROW(Ring<Slot>(slots(0), 2, [](std::size_t, Slot&) {}), Error);
}

}  // namespace
}  // namespace dnmf::stream
