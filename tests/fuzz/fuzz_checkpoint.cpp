// libFuzzer target: loading an NMFk job file (header, checksum, shape against the job, domain of every value).
// The job asked for is the one the input's header names, when its sizes are small (k, m, n <= 64), so that
// inputs reach the checksum and the domain checks instead of stopping at "its shape does not match".
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "dnmf/error.hpp"
#include "fuzz_file.hpp"
#include "nmfk/checkpoint.hpp"

namespace {

// The i64 at `at` when it lies in [low, 64], else `fallback`.
std::int64_t field(const std::uint8_t* data, std::size_t size, std::size_t at, std::int64_t low,
                   std::int64_t fallback) {
  if (size < at + 8) return fallback;
  std::int64_t v = 0;
  std::memcpy(&v, data + at, 8);
  return v >= low && v <= 64 ? v : fallback;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dnmf::fuzz::ScratchFile scratch("unused");
  static const dnmf::rank_search::CheckpointStore store(scratch.dir().string());
  // Header layout (checkpoint.cpp): magic 8, version 4, checksum 4, then k, p, m, n as i64.
  const std::int64_t k = field(data, size, 16, 1, 2), p = field(data, size, 24, 0, 0);
  const std::int64_t m = field(data, size, 32, 1, 3), n = field(data, size, 40, 1, 4);
  const std::string path = store.job_path(k, static_cast<int>(p));
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    std::string problem;
    (void)store.load(k, static_cast<int>(p), m, n, &problem);
  } catch (const dnmf::Error&) {
  }
  return 0;
}
