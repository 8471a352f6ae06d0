// Results travel from the group roots to world rank 0 as flat arrays of doubles.
#pragma once

#include <vector>

#include "dist/communicator.hpp"

namespace dnmf::rank_search {

/// Collective over `world`: every rank passes its payload (possibly empty); world rank 0 receives all of them,
/// indexed by rank (other ranks get an empty list).
std::vector<std::vector<double>> gather_payloads(dist::Communicator& world, const std::vector<double>& mine);

/// Reads doubles off a payload in order.
class PayloadReader {
 public:
  explicit PayloadReader(const std::vector<double>& data) : data_(data) {}
  [[nodiscard]] bool done() const { return position_ >= data_.size(); }
  double next();
  /// Copies the next `count` doubles to `out`.
  void next(double* out, std::size_t count);

 private:
  const std::vector<double>& data_;
  std::size_t position_ = 0;
};

}  // namespace dnmf::rank_search
