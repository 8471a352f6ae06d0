#include "nmfk/collect.hpp"

#include <algorithm>
#include <cstdint>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::rank_search {

std::vector<std::vector<double>> gather_payloads(dist::Communicator& world, const std::vector<double>& mine) {
  const int size = world.size();
  std::vector<std::int64_t> sizes(to_size(size), 0);
  const std::int64_t own = static_cast<std::int64_t>(mine.size());
  world.allgather(&own, sizes.data(), std::vector<std::size_t>(to_size(size), 1), dist::Scalar::i64);
  std::vector<std::size_t> counts(sizes.begin(), sizes.end());
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  const bool root = world.rank() == 0;
  std::vector<double> all(root ? std::max<std::size_t>(total, 1) : 0);
  world.gather(mine.data(), root ? all.data() : nullptr, counts, dist::Scalar::f64, 0);
  std::vector<std::vector<double>> out;
  if (!root) return out;
  std::size_t offset = 0;
  for (std::size_t c : counts) {
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(offset),
                     all.begin() + static_cast<std::ptrdiff_t>(offset + c));
    offset += c;
  }
  return out;
}

double PayloadReader::next() {
  if (position_ >= data_.size()) throw Error("internal: an NMFk result payload ended early");
  return data_[position_++];
}

void PayloadReader::next(double* out, std::size_t count) {
  if (position_ + count > data_.size()) throw Error("internal: an NMFk result payload ended early");
  std::copy(data_.begin() + static_cast<std::ptrdiff_t>(position_),
            data_.begin() + static_cast<std::ptrdiff_t>(position_ + count), out);
  position_ += count;
}

}  // namespace dnmf::rank_search
