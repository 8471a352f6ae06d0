#include "nmfk/content_hash.hpp"

#include <cstdio>
#include <cstring>

namespace dnmf::rank_search {
namespace {

// SplitMix64's finaliser: every input bit affects every output bit.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::uint64_t entry_hash(index_t row, index_t col, double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  std::uint64_t h = mix(static_cast<std::uint64_t>(row) + 0x9E3779B97F4A7C15ull);
  h = mix(h ^ (static_cast<std::uint64_t>(col) + 0x632BE59BD9B4E019ull));
  return mix(h ^ bits);
}

template <class T>
std::uint64_t block_content_hash(const io::LocalBlock<T>& block, index_t row0, index_t col0) {
  std::uint64_t sum = 0;  // unsigned: wraps mod 2^64 by definition
  if (block.sparse) {
    const auto& a = block.csr;
    for (index_t i = 0; i < a.rows(); ++i)
      for (index_t p = a.indptr()[to_size(i)]; p < a.indptr()[to_size(i + 1)]; ++p)
        if (const T v = a.values()[to_size(p)]; v != 0)
          sum += entry_hash(row0 + i, col0 + a.indices()[to_size(p)], static_cast<double>(v));
  } else {
    const auto& a = block.dense;
    for (index_t j = 0; j < a.cols(); ++j)
      for (index_t i = 0; i < a.rows(); ++i)
        if (const T v = a(i, j); v != 0) sum += entry_hash(row0 + i, col0 + j, static_cast<double>(v));
  }
  return sum;
}

std::uint64_t sum_content_hash(std::uint64_t share, dist::Communicator& comm) {
  // Four 16-bit limbs summed as i64 (exact for up to 2^47 ranks), then carried back mod 2^64: no reduction
  // of unsigned 64-bit integers is needed from the communicator.
  std::int64_t limbs[4];
  for (int q = 0; q < 4; ++q) limbs[q] = static_cast<std::int64_t>((share >> (16 * q)) & 0xFFFFu);
  comm.allreduce_sum(limbs, 4);
  std::uint64_t total = 0;
  for (int q = 0; q < 4; ++q) total += static_cast<std::uint64_t>(limbs[q]) << (16 * q);
  return total;
}

std::string content_hash_text(std::uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

template std::uint64_t block_content_hash<float>(const io::LocalBlock<float>&, index_t, index_t);
template std::uint64_t block_content_hash<double>(const io::LocalBlock<double>&, index_t, index_t);

}  // namespace dnmf::rank_search
