// libFuzzer target: the Matrix Market reader (banner, comments, size line, entry lines, symmetric mirroring,
// duplicate sums). Inputs whose size line announces more than kLimit rows, columns or entries are skipped
// after the header is parsed: the reader sizes its arrays by the header, as it must, and a 40-byte file
// announcing a billion rows would only measure the fuzzer's memory limit.
#include <cstddef>
#include <cstdint>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "fuzz_file.hpp"
#include "io/input_file.hpp"
#include "io/mtx_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dnmf::fuzz::ScratchFile scratch("fuzz.mtx");
  constexpr dnmf::index_t kLimit = 100000;
  const std::string& path = scratch.write(data, size);
  try {
    const dnmf::io::detail::InputFile file(path);
    const dnmf::io::mtx::Header header = dnmf::io::mtx::read_header(file);
    if (header.rows > kLimit || header.cols > kLimit || header.entries > kLimit) return 0;
    (void)dnmf::io::read_mtx<double>(path);
    (void)dnmf::io::read_mtx<float>(path);
  } catch (const dnmf::Error&) {
  }
  return 0;
}
