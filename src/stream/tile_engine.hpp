// What the device-streamed operand needs from a device, as an interface: D device tile buffers, the copy of a
// host tile into one of them (queued behind the compute that last read it), the compute stream's wait for
// that copy, and reductions that leave their sums on the device until the pass ends. The CUDA implementation
// (cuda_tile_engine.cpp) does this with a copy stream, the kernels' compute stream and per-slot events, so
// nothing in the tile loop waits on the host; a host implementation (tests/cuda) runs the same operand on the
// CPU, which is how the pipeline's bookkeeping is tested on machines without a GPU.
//
// Plain C++: no CUDA headers, so the operand compiles in every build.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "backend/kernels.hpp"
#include "stream/buffer.hpp"
#include "stream/timeline.hpp"

namespace dnmf::stream {

/// One pair of float64 sums a reduction leaves: {Σ a, Σ a²}, {Σ x∘y, 0} or the two KL sums.
using SumPair = std::array<double, 2>;

template <class T>
class TileEngine {
 public:
  virtual ~TileEngine() = default;
  /// The kernels tiles are computed with; the engine's compute work is ordered with theirs.
  [[nodiscard]] virtual backend::Kernels<T>& kernels() = 0;
  /// Memory for host tile buffers that copies read fastest from (pinned for CUDA).
  [[nodiscard]] virtual BufferAllocator host_allocator() = 0;
  /// Whether host_allocator() hands out page-locked memory.
  [[nodiscard]] virtual bool pins_host() const = 0;

  /// Creates `depth` device tile buffers of `elements` each, room for `sums` sum pairs per pass, events for
  /// `host_slots` host buffers and timeline events for `tiles` tiles. Called once, before any pass.
  virtual void configure(int depth, std::size_t elements, std::size_t tiles, std::size_t sums, int host_slots) = 0;
  /// Device tile buffer `slot`.
  [[nodiscard]] virtual T* slot(int slot) = 0;
  /// Makes a host range faster to copy from for the engine's lifetime (CUDA: cudaHostRegister); false when
  /// the memory stays pageable (copies still work, slower and less overlapped).
  virtual bool pin(const void* host, std::size_t bytes) = 0;

  /// Queues the copy of a host tile (rows x cols, column-major, leading dimension ld) into `slot`, after the
  /// compute that last used `slot` has finished. `tile` numbers the tile within its pass (timeline).
  virtual void copy_in(int slot, std::size_t tile, const T* host, index_t rows, index_t cols, index_t ld) = 0;
  /// Marks host buffer `host_slot` as read by the copies queued so far ...
  virtual void mark_host_read(int host_slot) = 0;
  /// ... and waits (on the thread that refills it) until those copies are done.
  virtual void wait_host_read(int host_slot) = 0;
  /// Orders the compute that follows after the copy into `slot`.
  virtual void compute_begin(int slot, std::size_t tile) = 0;
  /// Marks the end of the compute on `slot`: its next copy may start once this point is reached.
  virtual void compute_end(int slot, std::size_t tile) = 0;

  // Reductions, queued in compute order; each writes sum pair `at` of the pass.
  /// {Σ a, Σ a²} of the tile.
  virtual void stats(backend::CView<T> tile, std::size_t at) = 0;
  /// {Σ x∘y, 0}.
  virtual void dot(backend::CView<T> x, backend::CView<T> y, std::size_t at) = 0;
  /// Kernels::kl_multiply on a dense device tile, its KL sums left in pair `at`.
  virtual void kl_multiply(backend::CView<T> tile, backend::Side side, backend::CView<T> y, backend::CView<T> x,
                           backend::View<T> out, T beta, std::size_t at) = 0;
  /// Waits for the pass and returns its first `count` sum pairs.
  [[nodiscard]] virtual std::vector<SumPair> finish(std::size_t count) = 0;

  /// Records per-tile events from the next pass on (off by default: events cost a little).
  virtual void set_timeline(bool on) = 0;
  /// The intervals of the last pass's `tiles` tiles (waits for it); empty when the timeline is off.
  [[nodiscard]] virtual Timeline timeline(std::size_t tiles) = 0;
  /// Waits for everything queued on the copy and compute streams.
  virtual void synchronize() = 0;
};

}  // namespace dnmf::stream
