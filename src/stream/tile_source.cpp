#include "stream/tile_source.hpp"

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "stream/dcsr_source.hpp"
#include "stream/npy_source.hpp"

namespace dnmf::stream {
namespace {

// By format, not by suffix: "A.npz:x.npy" names an array inside an archive, which cannot stream.
bool is_format(const std::string& path, io::FileFormat format) {
  try {
    return io::format_of(path) == format;
  } catch (const Error&) {  // an unknown format: none of ours
    return false;
  }
}

}  // namespace

std::vector<dist::Range> even_ranges(index_t extent, index_t parts) {
  std::vector<dist::Range> ranges;
  if (parts < 1) parts = 1;
  const index_t base = extent / parts, extra = extent % parts;
  index_t first = 0;
  for (index_t p = 0; p < parts; ++p) {
    const index_t last = first + base + (p < extra ? 1 : 0);
    ranges.push_back({first, last});
    first = last;
  }
  return ranges;
}

bool streamable(const std::string& path) {
  return is_format(path, io::FileFormat::npy) || is_format(path, io::FileFormat::dcsr);
}

io::MatrixShape source_shape(const std::string& path) {
  if (is_format(path, io::FileFormat::npy)) {
    const io::NpyHeader h = io::read_npy_header(path);
    return {h.rows, h.cols, h.rows * h.cols, false};
  }
  if (is_format(path, io::FileFormat::dcsr)) return io::read_dcsr_shape(path);
  (void)open_source<double>(path, {}, {});  // the error for an unstreamable format
  return {};
}

template <class T>
std::unique_ptr<TileSource<T>> open_source(const std::string& path, dist::Range rows, dist::Range cols) {
  if (is_format(path, io::FileFormat::npy)) return std::make_unique<NpySource<T>>(path, rows, cols);
  if (is_format(path, io::FileFormat::dcsr)) return std::make_unique<DcsrSource<T>>(path, rows, cols);
  throw Error(path +
              ": cannot stream this format (streaming reads .npy and .dcsr; convert a .mtx, HDF5 or .npz file with "
              "`dnmf convert IN OUT.dcsr`)");
}

template std::unique_ptr<TileSource<float>> open_source<float>(const std::string&, dist::Range, dist::Range);
template std::unique_ptr<TileSource<double>> open_source<double>(const std::string&, dist::Range, dist::Range);

}  // namespace dnmf::stream
