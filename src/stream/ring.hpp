// The prefetch ring (DESIGN §5): D slots, a producer thread that fills them in order while the consumer works
// on the slot it holds, and a blocking hand-off in both directions.
//
// The ring knows nothing about files, matrices or memory kinds: a slot is whatever the caller made (host tile
// buffers, pinned buffers, device buffers) and `fill` is whatever brings a tile into it (pread, a
// host-to-device copy taking its input from another ring). The tile sequence is cyclic (tile 0, 1, ...,
// tiles-1, 0, 1, ...): every pass over A reads the same tiles in the same order, so the producer fills the
// first tiles of the next pass while the consumer finishes the current one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"

namespace dnmf::stream {

/// How the ring's time was spent.
struct RingStats {
  long long tiles_filled = 0;     ///< fills completed by the producer
  long long tiles_delivered = 0;  ///< tiles handed to the consumer
  double seconds_waiting = 0;     ///< consumer time blocked in acquire()
  double seconds_filling = 0;     ///< producer time inside fill
};

template <class Slot>
class Ring {
 public:
  /// Brings tile `tile` (0 <= tile < tiles) into `slot`; runs on the producer thread and may throw.
  using Fill = std::function<void(std::size_t tile, Slot& slot)>;

  /// Takes the slots (depth = slots.size() >= 1) and starts the producer on tile 0.
  Ring(std::vector<Slot> slots, std::size_t tiles, Fill fill)
      : slots_(std::move(slots)), tiles_(tiles), fill_(std::move(fill)) {
    if (slots_.empty()) throw Error("internal: a ring needs at least one slot");
    if (tiles_ == 0) throw Error("internal: a ring needs at least one tile");
    producer_ = std::thread([this] { produce(); });
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  /// Stops the producer (after the fill in progress, if any) and joins it.
  ~Ring() {
    {
      std::lock_guard lock(mutex_);
      shutdown_ = true;
    }
    to_producer_.notify_all();
    producer_.join();
  }

  [[nodiscard]] std::size_t depth() const { return slots_.size(); }
  [[nodiscard]] std::size_t tiles() const { return tiles_; }

  /// The next tile of the cycle, once filled. Rethrows, with its own message, an exception the producer
  /// raised filling it (the ring then stays failed until restart()).
  Slot& acquire() {
    std::unique_lock lock(mutex_);
    if (held_) throw Error("internal: ring slot acquired twice without release");
    auto ready = [&] { return produced_ > consumed_ || (error_ != nullptr && error_sequence_ == consumed_); };
    if (!ready()) {
      const auto start = std::chrono::steady_clock::now();
      to_consumer_.wait(lock, ready);
      stats_.seconds_waiting += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (produced_ <= consumed_) std::rethrow_exception(error_);
    held_ = true;
    ++stats_.tiles_delivered;
    return slots_[consumed_ % slots_.size()];
  }

  /// The tile number (within the cycle) of the slot acquire() would return next.
  [[nodiscard]] std::size_t next_tile() const {
    std::lock_guard lock(mutex_);
    return consumed_ % tiles_;
  }

  /// Hands the slot acquired last back to the producer.
  void release() {
    {
      std::lock_guard lock(mutex_);
      if (!held_) throw Error("internal: ring release without acquire");
      held_ = false;
      ++consumed_;
    }
    to_producer_.notify_all();
  }

  /// Drops every filled or in-flight tile and the failure, if any, and starts the cycle again at tile 0: for
  /// a pass abandoned midway. Waits for a fill in progress to finish (its result is discarded).
  void restart() {
    std::unique_lock lock(mutex_);
    ++generation_;
    to_consumer_.wait(lock, [&] { return !filling_; });
    produced_ = consumed_ = 0;
    held_ = false;
    error_ = nullptr;
    lock.unlock();
    to_producer_.notify_all();
  }

  [[nodiscard]] RingStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  void produce() {
    std::unique_lock lock(mutex_);
    for (;;) {
      to_producer_.wait(lock,
                        [&] { return shutdown_ || (error_ == nullptr && produced_ < consumed_ + slots_.size()); });
      if (shutdown_) return;
      const std::size_t sequence = produced_;
      const std::size_t generation = generation_;
      filling_ = true;
      lock.unlock();
      std::exception_ptr error;
      const auto start = std::chrono::steady_clock::now();
      try {
        fill_(sequence % tiles_, slots_[sequence % slots_.size()]);
      } catch (...) {
        error = std::current_exception();
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      lock.lock();
      filling_ = false;
      stats_.seconds_filling += seconds;
      if (generation == generation_) {
        if (error != nullptr) {
          error_ = error;
          error_sequence_ = sequence;
        } else {
          produced_ = sequence + 1;
          ++stats_.tiles_filled;
        }
      }
      to_consumer_.notify_all();
    }
  }

  std::vector<Slot> slots_;
  const std::size_t tiles_;
  Fill fill_;
  mutable std::mutex mutex_;
  std::condition_variable to_producer_;  // a slot was freed, the ring restarted or is shutting down
  std::condition_variable to_consumer_;  // a slot was filled, failed, or a fill ended
  std::size_t produced_ = 0;             // sequence numbers [0, produced_) are filled
  std::size_t consumed_ = 0;             // sequence numbers [0, consumed_) were released
  std::size_t generation_ = 0;           // bumped by restart(): a fill begun earlier is discarded
  bool held_ = false;                    // the consumer holds slot consumed_ % depth
  bool filling_ = false;
  bool shutdown_ = false;
  std::exception_ptr error_;
  std::size_t error_sequence_ = 0;
  RingStats stats_;
  std::thread producer_;  // started in the constructor body, once every member above is initialised
};

}  // namespace dnmf::stream
