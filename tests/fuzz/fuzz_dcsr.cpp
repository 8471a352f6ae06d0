// libFuzzer target: the .dcsr reader: header, checksum table, header-versus-array checks, per-chunk checksum
// verification, and the entry checks of a whole read, a block read and a streamed read of a column subset.
#include <cstddef>
#include <cstdint>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "fuzz_file.hpp"
#include "io/dcsr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dnmf::fuzz::ScratchFile scratch("fuzz.dcsr");
  const std::string& path = scratch.write(data, size);
  try {
    (void)dnmf::io::read_dcsr<double>(path);
  } catch (const dnmf::Error&) {
  }
  try {
    // A block in the middle, converted to float and narrowed to some columns: the staging path.
    const dnmf::io::DcsrHeader h = dnmf::io::read_dcsr_header(path);
    (void)dnmf::io::read_dcsr_block<float>(path, {h.rows / 3, h.rows - h.rows / 3}, {h.cols / 4, h.cols / 2});
  } catch (const dnmf::Error&) {
  }
  return 0;
}
