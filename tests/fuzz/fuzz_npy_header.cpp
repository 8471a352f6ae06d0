// libFuzzer target: the .npy header parser (magic, version, the Python dict) and the matrix checks after it.
// Every input must end in a header or a dnmf::Error, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dnmf/error.hpp"
#include "io/npy_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const dnmf::io::NpyArrayHeader array = dnmf::io::parse_npy_array_header(bytes, "fuzz.npy");
    (void)dnmf::io::matrix_header(array, size, "fuzz.npy");
  } catch (const dnmf::Error&) {
  }
  return 0;
}
