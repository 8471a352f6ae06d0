#include "stream/tile_source.hpp"

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "stream/dcsr_source.hpp"
#include "stream/npy_source.hpp"

namespace dnmf::stream {

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

bool streamable(const std::string& path) { return path.ends_with(".npy") || path.ends_with(".dcsr"); }

io::MatrixShape source_shape(const std::string& path) {
  if (path.ends_with(".npy")) {
    const io::NpyHeader h = io::read_npy_header(path);
    return {h.rows, h.cols, h.rows * h.cols, false};
  }
  if (path.ends_with(".dcsr")) return io::read_dcsr_shape(path);
  (void)open_source<double>(path, {}, {});  // the error for an unstreamable format
  return {};
}

template <class T>
std::unique_ptr<TileSource<T>> open_source(const std::string& path, dist::Range rows, dist::Range cols) {
  if (path.ends_with(".npy")) return std::make_unique<NpySource<T>>(path, rows, cols);
  if (path.ends_with(".dcsr")) return std::make_unique<DcsrSource<T>>(path, rows, cols);
  throw Error(path +
              ": cannot stream this format (streaming reads .npy and .dcsr; convert a .mtx file with "
              "`dnmf convert IN.mtx OUT.dcsr`)");
}

template std::unique_ptr<TileSource<float>> open_source<float>(const std::string&, dist::Range, dist::Range);
template std::unique_ptr<TileSource<double>> open_source<double>(const std::string&, dist::Range, dist::Range);

}  // namespace dnmf::stream
