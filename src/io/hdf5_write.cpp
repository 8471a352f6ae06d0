// Writing matrices to HDF5: a dense dataset or a CSR group (serial), and the factors W and H from every rank
// into one file (collective). See hdf5_io.hpp.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/source.hpp"
#include "io/collective_failure.hpp"
#include "io/csr_to_write.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_util.hpp"

namespace dnmf::io {
namespace {

using h5::Id;

constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

template <class T>
hid_t file_type() {
  return sizeof(T) == 4 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
}

// The object's absolute name; UsageError naming the file for a name of no object ("" and "/" are the root group,
// which was reported as "already holds an object '/'" even of a file not there).
std::string absolute_name(const std::string& path, std::string name) {
  if (name.find_first_not_of('/') == std::string::npos)
    throw UsageError(path + ": the object name '" + name +
                     "' names the root group; give a dataset or group name such "
                     "as \"X\" or \"/group/X\"");
  if (name.front() != '/') name = "/" + name;
  return name;
}

[[noreturn]] void fail_errno(const std::string& what, int error) { throw IoError(what + ": " + std::strerror(error)); }

/// Why `path` could not be created, where the folder explains it (HDF5's own message names only errno): the
/// folder is absent, not a folder, or not writable; otherwise HDF5's reason.
[[noreturn]] void fail_create(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec))
    throw IoError(path + ": cannot create: the directory '" + folder + "' does not exist");
  if (!std::filesystem::is_directory(folder, ec))
    throw IoError(path + ": cannot create: '" + folder + "' is not a directory");
  if (::access(folder.c_str(), W_OK) != 0)
    throw IoError(path + ": cannot create: the directory '" + folder + "' is not writable (" + std::strerror(errno) +
                  ")");
  h5::fail(path + ": cannot create");
}

/// The whole of an existing file, for appending to it in memory.
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) fail_errno(path + ": cannot read to append to it", errno);
  return bytes;
}

/// Runs `fill(file)` on a file built in memory (HDF5's core driver, no backing store) and then written to `path`
/// by write_file_atomically: a new file (append=false) or `path`'s contents with what `fill` adds (append=true; a
/// missing `path` starts empty). HDF5 never writes to the disk here: when its own writes failed (a full disk, a
/// file size limit) the file could not be closed, and HDF5's exit-time cleanup of it crashed the process (exit
/// 139) after a message full of HDF5's internals; write_file_atomically says "cannot write: <reason>" (exit 4).
/// The image is held in memory twice at the end (HDF5's and the copy written out).
template <class Fill>
void with_output_file(const std::string& path, bool append, Fill&& fill) {
  const h5::QuietErrors quiet;
  std::string existing = append && std::filesystem::exists(path) ? file_bytes(path) : std::string();
  const Id access = h5::checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path + ": cannot create a file access list");
  if (H5Pset_fapl_core(access.get(), std::size_t{1} << 20, 0) < 0) h5::fail(path + ": cannot build the file in memory");
  Id file;
  if (!existing.empty()) {
    if (H5Pset_file_image(access.get(), existing.data(), existing.size()) < 0)  // copied: `existing` may go
      h5::fail(path + ": cannot hold the file in memory");
    std::string().swap(existing);
    // A name no file has: with a name on the disk, the core driver looked at that file ("file already exists").
    const std::string label = path + ".in-memory-image";
    file = h5::checked(H5Fopen(label.c_str(), H5F_ACC_RDWR, access.get()), H5Fclose,
                       path + ": cannot open for writing (not an HDF5 file?)");
  } else {
    file = h5::checked(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose,
                       path + ": cannot create in memory");
  }
  fill(file.get());
  if (H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0) h5::fail(path + ": cannot finish the file in memory");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size < 0) h5::fail(path + ": cannot take the file's image");
  std::string image(static_cast<std::size_t>(size), '\0');
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != size)
    h5::fail(path + ": cannot take the file's image");
  file.close();
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) fail_create(path);  // its clearer words
  write_file_atomically(
      path, [&image](std::ostream& out) { out.write(image.data(), static_cast<std::streamsize>(image.size())); });
}

Id link_creation(const std::string& where) {
  Id lcpl = h5::checked(H5Pcreate(H5P_LINK_CREATE), H5Pclose, where + ": cannot create a link property list");
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  return lcpl;
}

void check_absent(hid_t file, const std::string& path, const std::string& name) {
  if (h5::exists(file, name)) throw Error(path + ": already holds an object '" + name + "'");
}

/// Writes `count` elements of a 1-D dataset of `type` named `name` under `group`.
void write_1d(hid_t group, const char* name, hid_t type, hid_t memory_type, const void* data, hsize_t count,
              const std::string& where) {
  const Id space = h5::checked(H5Screate_simple(1, &count, nullptr), H5Sclose, where + ": cannot create a dataspace");
  const Id dataset = h5::checked(H5Dcreate2(group, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                 H5Dclose, where + ": cannot create dataset '" + name + "'");
  if (count > 0 && H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    h5::fail(where + ": cannot write dataset '" + name + "'");
  }
}

/// Writes the block rows [row0, row0 + rows) x columns [col0, col0 + cols) of a 2-D dataset in one H5Dwrite
/// (so that a collective `transfer` sees the same number of calls on every rank; an empty block takes part
/// with an empty selection). `at(i, j)` gives the block's entry (i, j).
template <class T, class At>
void write_block(hid_t dataset, index_t row0, index_t col0, index_t rows, index_t cols, At&& at, hid_t transfer,
                 const std::string& what) {
  const Id space = h5::checked(H5Dget_space(dataset), H5Sclose, what);
  std::vector<T> buffer(to_size(std::max<index_t>(1, rows * cols)));
  Id memory;
  if (rows == 0 || cols == 0) {
    H5Sselect_none(space.get());
    const hsize_t one = 1;
    memory = h5::checked(H5Screate_simple(1, &one, nullptr), H5Sclose, what);
    H5Sselect_none(memory.get());
  } else {
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) buffer[to_size(i * cols + j)] = at(i, j);
    const hsize_t start[2] = {static_cast<hsize_t>(row0), static_cast<hsize_t>(col0)};
    const hsize_t count[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0) h5::fail(what);
    memory = h5::checked(H5Screate_simple(2, count, nullptr), H5Sclose, what);
  }
  if (H5Dwrite(dataset, h5::native_type<T>(), memory.get(), space.get(), transfer, buffer.data()) < 0)
    h5::fail_io(what);  // the disk's refusal (full, a size limit) on the collective path: exit 4
}

Id create_2d(hid_t file, const std::string& name, hid_t type, index_t rows, index_t cols, hid_t lcpl,
             const std::string& where) {
  const hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
  const Id space = h5::checked(H5Screate_simple(2, dims, nullptr), H5Sclose, where + ": cannot create a dataspace");
  return h5::checked(H5Dcreate2(file, name.c_str(), type, space.get(), lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
                     where + ": cannot create dataset '" + name + "'");
}

}  // namespace

template <class T>
void write_h5_dense(const std::string& path, const std::string& dataset, DenseView<const T> matrix, bool append) {
  dnmf::detail::check_view(path.c_str(), MatrixRef<T>{matrix});
  const std::string name = absolute_name(path, dataset);
  const std::string where = path + ":" + name;
  with_output_file(path, append, [&](hid_t file) {
    check_absent(file, path, name);
    const Id lcpl = link_creation(path);
    const Id out = create_2d(file, name, file_type<T>(), matrix.rows, matrix.cols, lcpl.get(), where);
    // Row-major slabs of whole rows bound the conversion buffer.
    const index_t slab =
        std::max<index_t>(1, static_cast<index_t>(kChunkBytes / sizeof(T)) / std::max<index_t>(1, matrix.cols));
    for (index_t i0 = 0; i0 < matrix.rows && matrix.cols > 0; i0 += slab) {
      const index_t ri = std::min(slab, matrix.rows - i0);
      write_block<T>(
          out.get(), i0, 0, ri, matrix.cols, [&](index_t i, index_t j) { return matrix(i0 + i, j); }, H5P_DEFAULT,
          where + ": cannot write");
    }
  });
}

template <class T>
void write_h5_csr(const std::string& path, const std::string& group, CsrView<T> matrix, bool append) {
  detail::check_csr_to_write(path, matrix);
  const std::string name = absolute_name(path, group);
  const std::string where = path + ":" + name;
  with_output_file(path, append, [&](hid_t file) {
    check_absent(file, path, name);
    const Id lcpl = link_creation(path);
    const Id g = h5::checked(H5Gcreate2(file, name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                             where + ": cannot create the group");
    h5::write_string_attribute(g.get(), "encoding-type", "csr_matrix", where);
    h5::write_string_attribute(g.get(), "encoding-version", "0.1.0", where);
    h5::write_integer_attribute(g.get(), "shape", {matrix.rows, matrix.cols}, where);
    const index_t base = matrix.rows > 0 ? matrix.indptr[0] : 0;  // a row range of a larger matrix starts later
    std::vector<std::int64_t> indptr(to_size(matrix.rows) + 1, 0);
    for (index_t i = 0; i <= matrix.rows && matrix.rows > 0; ++i) indptr[i] = matrix.indptr[i] - base;
    const auto nnz = static_cast<hsize_t>(matrix.nnz());
    write_1d(g.get(), "data", file_type<T>(), h5::native_type<T>(), matrix.values + base, nnz, where);
    write_1d(g.get(), "indices", H5T_STD_I32LE, H5T_NATIVE_INT32, matrix.indices + base, nnz, where);
    write_1d(g.get(), "indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, indptr.data(), indptr.size(), where);
  });
}

template <class T>
void write_factors_h5(const std::string& path, const dist::Grid& grid, const dist::Layout& layout,
                      DenseView<const T> wt, DenseView<const T> h) {
  dist::Communicator& comm = grid.world();
  const h5::QuietErrors quiet;
  // Every rank agrees on k and on its pieces' shapes before any collective HDF5 call.
  const index_t k = wt.rows;
  detail::run_agreed(comm, path, [&] {
    if (wt.cols != layout.w_rows.size() || h.rows != k || h.cols != layout.h_cols.size()) {
      throw Error(path + ": factor pieces of this rank are " + std::to_string(wt.rows) + "x" + std::to_string(wt.cols) +
                  " (Wt) and " + std::to_string(h.rows) + "x" + std::to_string(h.cols) + " (H); the layout needs k x " +
                  std::to_string(layout.w_rows.size()) + " and k x " + std::to_string(layout.h_cols.size()));
    }
  });
  if (comm.max<std::int64_t>(k) != -comm.max<std::int64_t>(-k)) {
    throw CollectiveError(path + ": ranks disagree on the number of factors k");
  }
  if (comm.size() == 1) {  // built in memory and written atomically (with_output_file says why)
    with_output_file(path, false, [&](hid_t file) {
      const Id w = create_2d(file, "W", file_type<T>(), layout.m, k, H5P_DEFAULT, path);
      const Id hd = create_2d(file, "H", file_type<T>(), k, layout.n, H5P_DEFAULT, path);
      write_block<T>(
          w.get(), 0, 0, wt.cols, k, [&](index_t i, index_t l) { return wt(l, i); }, H5P_DEFAULT,
          path + ": cannot write W");
      write_block<T>(
          hd.get(), 0, 0, k, h.cols, [&](index_t l, index_t j) { return h(l, j); }, H5P_DEFAULT,
          path + ": cannot write H");
    });
    return;
  }
  // One temporary name for all ranks: rank 0's process id.
  std::int64_t pid = ::getpid();
  comm.broadcast(&pid, 1, dist::Scalar::i64, 0);
  const std::string temp = path + ".tmp." + std::to_string(pid);
  const auto remove_temp = [&] {
    if (comm.rank() == 0) std::remove(temp.c_str());
  };

  try {
    Id access = detail::run_agreed(comm, path, [&] { return h5::file_access(comm); });
    Id file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);  // collective
    detail::run_agreed(comm, path, [&] {
      if (!file.valid()) fail_create(path);
    });
    Id w, hd, transfer;
    detail::run_agreed(comm, path, [&] {
      w = create_2d(file.get(), "W", file_type<T>(), layout.m, k, H5P_DEFAULT, path);
      hd = create_2d(file.get(), "H", file_type<T>(), k, layout.n, H5P_DEFAULT, path);
      transfer = h5::checked(H5Pcreate(H5P_DATASET_XFER), H5Pclose, path + ": cannot create a transfer list");
      if (comm.size() > 1 && H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_COLLECTIVE) < 0) {
        h5::fail(path + ": cannot set collective transfers");
      }
    });
    detail::run_agreed(comm, path, [&] {
      // W's rows this rank owns are the columns of Wt; its columns of H are H's own piece.
      write_block<T>(
          w.get(), layout.w_rows.first, 0, wt.cols, k, [&](index_t i, index_t l) { return wt(l, i); }, transfer.get(),
          path + ": cannot write W");
      write_block<T>(
          hd.get(), 0, layout.h_cols.first, k, h.cols, [&](index_t l, index_t j) { return h(l, j); }, transfer.get(),
          path + ": cannot write H");
    });
    detail::run_agreed(comm, path, [&] {
      // Every close on every rank (no short cut: they are collective).
      const herr_t statuses[3] = {w.close(), hd.close(), file.close()};
      if (std::any_of(statuses, statuses + 3, [](herr_t s) { return s < 0; })) {
        h5::fail_io(path + ": cannot finish writing (as " + temp + ")");
      }
    });
    // Every rank has closed the file (the agreement above is a barrier); rank 0 puts it in place.
    detail::run_agreed(comm, path, [&] {
      if (comm.rank() == 0 && std::rename(temp.c_str(), path.c_str()) != 0) {
        fail_errno(path + ": cannot write (renaming " + temp + ")", errno);
      }
    });
  } catch (...) {
    remove_temp();
    throw;
  }
}

#define DNMF_INSTANTIATE_HDF5_WRITE(T)                                                                              \
  template void write_h5_dense<T>(const std::string&, const std::string&, DenseView<const T>, bool);                \
  template void write_h5_csr<T>(const std::string&, const std::string&, CsrView<T>, bool);                          \
  template void write_factors_h5<T>(const std::string&, const dist::Grid&, const dist::Layout&, DenseView<const T>, \
                                    DenseView<const T>);
DNMF_INSTANTIATE_HDF5_WRITE(float)
DNMF_INSTANTIATE_HDF5_WRITE(double)
#undef DNMF_INSTANTIATE_HDF5_WRITE

}  // namespace dnmf::io
