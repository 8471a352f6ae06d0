// A TileEngine on the host: tile buffers are host vectors, copies are memcpy, the compute is the given host
// kernels. It runs the device-streamed operand on machines without a GPU, and checks the protocol the CUDA
// engine relies on as it goes: a buffer is refilled only after the compute on it ended, computed on only
// after its copy, sum pairs stay within what was configured, host buffers are marked read before refilling.
// A violation is recorded (not thrown, so the operand's own error paths are not what is tested).
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "dnmf/index.hpp"
#include "stream/tile_engine.hpp"

namespace dnmf::test {

template <class T>
class HostTileEngine final : public stream::TileEngine<T> {
 public:
  explicit HostTileEngine(backend::Kernels<T>& kernels) : kernels_(kernels) {}

  /// Protocol violations seen so far, one line each.
  [[nodiscard]] const std::vector<std::string>& violations() const { return violations_; }
  [[nodiscard]] long long copies() const { return copies_; }
  [[nodiscard]] long long finishes() const { return finishes_; }
  [[nodiscard]] long long host_reads_marked() const { return host_marks_; }
  [[nodiscard]] int configured_depth() const { return static_cast<int>(slots_.size()); }

  backend::Kernels<T>& kernels() override { return kernels_; }
  stream::BufferAllocator host_allocator() override { return stream::host_allocator(); }
  [[nodiscard]] bool pins_host() const override { return false; }

  void configure(int depth, std::size_t elements, std::size_t tiles, std::size_t sums, int host_slots) override {
    if (!slots_.empty()) fail("configured twice");
    slots_.assign(to_size(depth), std::vector<T>(elements));
    state_.assign(to_size(depth), State::free);
    sums_.assign(sums, {0.0, 0.0});
    host_marked_.assign(to_size(host_slots), 1);
    tiles_ = tiles;
  }
  T* slot(int s) override { return slots_.at(to_size(s)).data(); }
  bool pin(const void*, std::size_t) override {
    ++pins_;
    return false;
  }

  void copy_in(int s, std::size_t tile, const T* host, index_t rows, index_t cols, index_t ld) override {
    auto& st = state_.at(to_size(s));
    if (st == State::copied || st == State::computing) fail("copy into buffer " + std::to_string(s) + " in use");
    if (tile >= tiles_) fail("tile number out of range");
    if (to_size(rows * cols) > slots_[to_size(s)].size()) fail("tile too large");
    T* dst = slot(s);
    for (index_t j = 0; j < cols; ++j) std::memcpy(dst + j * rows, host + j * ld, to_size(rows) * sizeof(T));
    st = State::copied;
    ++copies_;
  }
  void mark_host_read(int h) override {
    host_marked_.at(to_size(h)) = 1;
    ++host_marks_;
  }
  void wait_host_read(int h) override {
    // Called by the producer before refilling: the consumer must have marked the last copy from it (or
    // never used it yet).
    if (host_marked_.at(to_size(h)) == 0) fail("host buffer refilled before marked read");
    host_marked_[to_size(h)] = 0;
  }
  void compute_begin(int s, std::size_t) override {
    auto& st = state_.at(to_size(s));
    if (st != State::copied) fail("compute on buffer " + std::to_string(s) + " before its copy");
    st = State::computing;
  }
  void compute_end(int s, std::size_t) override {
    auto& st = state_.at(to_size(s));
    if (st != State::computing) fail("compute end without begin on buffer " + std::to_string(s));
    st = State::free;
  }

  void stats(backend::CView<T> tile, std::size_t at) override {
    const backend::MatrixStats s = kernels_.stats(MatrixRef<T>{DenseView<const T>(tile)});
    pair(at) = {s.sum, s.squared_norm};
  }
  void dot(backend::CView<T> x, backend::CView<T> y, std::size_t at) override { pair(at) = {kernels_.dot(x, y), 0.0}; }
  void kl_multiply(backend::CView<T> tile, backend::Side side, backend::CView<T> y, backend::CView<T> x,
                   backend::View<T> out, T beta, std::size_t at) override {
    const backend::KlSums s = kernels_.kl_multiply(MatrixRef<T>{DenseView<const T>(tile)}, side, y, x, out, beta);
    pair(at) = {s.a_log_a_over_m, s.a_times_m};
  }
  std::vector<stream::SumPair> finish(std::size_t count) override {
    ++finishes_;
    if (count > sums_.size()) fail("finish asked for more sums than configured");
    return {sums_.begin(), sums_.begin() + static_cast<std::ptrdiff_t>(std::min(count, sums_.size()))};
  }
  void set_timeline(bool on) override { timeline_ = on; }
  stream::Timeline timeline(std::size_t) override { return {}; }
  void synchronize() override {}

 private:
  enum class State { free, copied, computing };
  void fail(const std::string& what) { violations_.push_back(what); }
  stream::SumPair& pair(std::size_t at) {
    if (at >= sums_.size()) {
      fail("sum pair " + std::to_string(at) + " beyond " + std::to_string(sums_.size()));
      static stream::SumPair sink;
      return sink;
    }
    return sums_[at];
  }

  backend::Kernels<T>& kernels_;
  std::vector<std::vector<T>> slots_;
  std::vector<State> state_;
  std::vector<stream::SumPair> sums_;
  std::vector<char> host_marked_;
  std::size_t tiles_ = 0;
  std::vector<std::string> violations_;
  long long copies_ = 0, finishes_ = 0, host_marks_ = 0, pins_ = 0;
  bool timeline_ = false;
};

}  // namespace dnmf::test
