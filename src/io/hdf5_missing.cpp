// HDF5 entry points of a build without the HDF5 library: each says so (compiled instead of hdf5_*.cpp).
#include "dnmf/error.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_path.hpp"

namespace dnmf::io {
namespace {

[[noreturn]] void not_built(const std::string& path) {
  throw Error(split_hdf5_path(path).file +
              ": HDF5 support is not built into this dnmf (install libhdf5-openmpi-dev and libopenmpi-dev and "
              "rebuild), or convert the matrix to .npy or .mtx");
}

}  // namespace

bool hdf5_built() { return false; }

MatrixShape hdf5_shape(const std::string& path) { not_built(path); }

template <class T>
LocalBlock<T> read_hdf5_block(const std::string& path, dist::Range, dist::Range, dist::Communicator&, bool) {
  not_built(path);
}

template <class T>
void write_h5_dense(const std::string& path, const std::string&, DenseView<const T>, bool) {
  not_built(path);
}

template <class T>
void write_h5_csr(const std::string& path, const std::string&, CsrView<T>, bool) {
  not_built(path);
}

template <class T>
void write_factors_h5(const std::string& path, const dist::Grid&, const dist::Layout&, DenseView<const T>,
                      DenseView<const T>) {
  not_built(path);
}

#define DNMF_INSTANTIATE_HDF5(T)                                                                                      \
  template LocalBlock<T> read_hdf5_block<T>(const std::string&, dist::Range, dist::Range, dist::Communicator&, bool); \
  template void write_h5_dense<T>(const std::string&, const std::string&, DenseView<const T>, bool);                  \
  template void write_h5_csr<T>(const std::string&, const std::string&, CsrView<T>, bool);                            \
  template void write_factors_h5<T>(const std::string&, const dist::Grid&, const dist::Layout&, DenseView<const T>,   \
                                    DenseView<const T>);
DNMF_INSTANTIATE_HDF5(float)
DNMF_INSTANTIATE_HDF5(double)
#undef DNMF_INSTANTIATE_HDF5

}  // namespace dnmf::io
