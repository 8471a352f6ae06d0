// dnmf: reading and writing matrices (.npy, Matrix Market) and atomic result files.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <ostream>
#include <string>

#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// What a .npy header says about the array that follows it.
struct NpyHeader {
  char kind = 'f';              ///< numpy dtype kind: 'f' float, 'i' signed, 'u' unsigned integer
  std::size_t word_size = 8;    ///< bytes per element
  bool little_endian = true;    ///< byte order of the stored elements
  bool fortran_order = false;   ///< true: column-major on disk
  index_t rows = 0;             ///< first dimension (a 1-D array is read as rows x 1)
  index_t cols = 0;             ///< second dimension
  std::size_t data_offset = 0;  ///< byte offset of the first element in the file
};

/// Parses and checks the header of a .npy file (magic, version, dict, shape, file length).
NpyHeader read_npy_header(const std::string& path);

/// Reads a whole 2-D .npy array (f4 or f8, C or Fortran order) into a column-major matrix of T.
template <class T>
DenseMatrix<T> read_npy(const std::string& path);

/// Reads columns [first, last) only, touching no other bytes of a Fortran-order file
/// (a C-order file is read row by row, each row's slice only).
template <class T>
DenseMatrix<T> read_npy_columns(const std::string& path, index_t first, index_t last);

/// Reads rows [first, last) only (the mirror of read_npy_columns).
template <class T>
DenseMatrix<T> read_npy_rows(const std::string& path, index_t first, index_t last);

/// Writes a column-major matrix as a Fortran-order .npy (atomically).
template <class T>
void write_npy(const std::string& path, DenseView<const T> matrix);

/// Writes a matrix given as its row-major storage (data[i * cols + j]) as a C-order .npy (atomically).
template <class T>
void write_npy_row_major(const std::string& path, const T* data, index_t rows, index_t cols);

/// Reads a Matrix Market coordinate file (real, integer or pattern; general or symmetric) into CSR.
/// Duplicate entries are summed (one that is not acceptable_entry() is kept instead of the sum); column indices
/// come out sorted.
template <class T>
CsrMatrix<T> read_mtx(const std::string& path);

/// Writes CSR as a Matrix Market "coordinate real general" file (atomically).
template <class T>
void write_mtx(const std::string& path, CsrView<T> matrix);

/// Writes a file atomically: `write` fills a temporary file beside `path`, which is then renamed over
/// `path`. A failure (or an exception from `write`) removes the temporary and leaves `path` untouched.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// Removes the temporary files write_file_atomically() is filling at this moment. Async-signal-safe (unlink
/// only): for a signal handler that ends the process, whose unwinding would otherwise never remove them.
void remove_temporaries_in_flight() noexcept;

/// Throws dnmf::Error naming `source` and the (0-based) row and column of the first negative,
/// NaN or infinite entry.
template <class T>
void check_nonnegative(DenseView<const T> matrix, const std::string& source);
template <class T>
void check_nonnegative(CsrView<T> matrix, const std::string& source);

/// The same checks for a block of a larger matrix whose entry (0, 0) is (row_offset, col_offset) of the
/// whole: the message names the entry's global row and column. `transposed`: the whole is stored as Aᵀ (a
/// row-major or CSC input), and the message names the entry's row and column in A.
template <class T>
void check_nonnegative(DenseView<const T> block, const std::string& source, index_t row_offset, index_t col_offset,
                       bool transposed = false);
template <class T>
void check_nonnegative(CsrView<T> block, const std::string& source, index_t row_offset, index_t col_offset,
                       bool transposed = false);

/// True for a finite, non-negative value (-0.0 included): what NMF accepts as an entry.
template <class T>
[[nodiscard]] bool acceptable_entry(T value) {
  return value >= T(0) && value <= std::numeric_limits<T>::max();
}

/// What is wrong with an entry that is not acceptable_entry(): "entry at row R, column C (0-based) is V;
/// input must be ..." (the text check_nonnegative puts after "<source>: ").
template <class T>
std::string describe_bad_entry(index_t row, index_t col, T value);

/// Input formats recognised by file name.
enum class FileFormat { npy, matrix_market, hdf5, dcsr, npz };

/// Picks the format from the extension: .npy, .npz (also with an array's name: "A.npz:counts"), .mtx, .dcsr,
/// .h5/.hdf5/.h5ad (also with an object's name after a colon: "A.h5:/X", "A.h5ad:/layers/counts"); throws
/// dnmf::Error for anything else.
FileFormat format_of(const std::string& path);

/// "npy", "npz", "mtx", "hdf5" or "dcsr": the names reports use.
std::string format_name(FileFormat format);

/// What a matrix file holds, learnt without reading its entries.
struct MatrixShape {
  index_t rows = 0;
  index_t cols = 0;
  index_t stored = -1;  ///< entries the file stores (nnz of a sparse file; rows*cols for dense); -1: unknown
  bool sparse = false;
};

/// The shape of a matrix in memory (stored: rows*cols for dense, the CSR's entries for sparse).
template <class T>
[[nodiscard]] MatrixShape shape_of(const MatrixRef<T>& a) {
  const bool sparse = is_sparse(a);
  return {rows_of(a), cols_of(a), sparse ? std::get<CsrView<T>>(a).nnz() : rows_of(a) * cols_of(a), sparse};
}

/// Shape of the matrix file `path` (any format of format_of), read by this process alone.
MatrixShape read_shape(const std::string& path);

/// A whole matrix read from a file of any format, owning its storage: dense (.npy, an .npz array, dense HDF5
/// datasets) or CSR (.mtx, .dcsr, scipy .npz archives, HDF5 CSR and CSC groups).
template <class T>
struct LoadedMatrix {
  bool sparse = false;
  DenseMatrix<T> dense;  ///< the matrix when !sparse
  CsrMatrix<T> csr;      ///< the matrix when sparse
  /// The matrix as the solvers take it.
  [[nodiscard]] MatrixRef<T> ref() const { return sparse ? MatrixRef<T>{csr.view()} : MatrixRef<T>{dense.view()}; }
};

/// Reads the whole matrix `path` in precision T on this process, entries as stored in every format: negative,
/// NaN and infinite entries are checked by the entry points (a masked run only at observed places), or
/// reported by `dnmf info`. The structure (shape, indices, checksums) is checked here.
template <class T>
LoadedMatrix<T> load_matrix(const std::string& path);

/// Writes `matrix` as the 2-D row-major dataset `dataset` ("/X", intermediate groups created) of HDF5 file
/// `path`. append=false: `path` is replaced atomically by a new file holding only this dataset; append=true: the
/// dataset is added to `path` (created when absent; an existing object of that name is an error), and the file is
/// replaced atomically as well. The file is built in memory and written whole (a full disk is an IoError, never a
/// half-written file): it takes about twice its size in memory at the end. dnmf::Error in builds without HDF5.
template <class T>
void write_h5_dense(const std::string& path, const std::string& dataset, DenseView<const T> matrix,
                    bool append = false);

/// Writes `matrix` as a CSR group `group` in AnnData's layout: datasets data (T), indices (int32), indptr
/// (int64), attributes encoding-type "csr_matrix", encoding-version "0.1.0" and shape [rows, cols]. `append`
/// as for write_h5_dense.
template <class T>
void write_h5_csr(const std::string& path, const std::string& group, CsrView<T> matrix, bool append = false);

/// Writes `matrix` (column indices increasing within each row) as a .dcsr file with values stored as T
/// (atomically; docs/formats.md).
template <class T>
void write_dcsr(const std::string& path, CsrView<T> matrix);

/// The whole .dcsr file `path` in precision T (entries checked: finite, non-negative, indices in range).
template <class T>
CsrMatrix<T> read_dcsr(const std::string& path);

/// `dnmf convert`: any matrix file into .dcsr with values stored as T (dense input loses its zeros), or a .dcsr
/// into Matrix Market or rewritten as .dcsr of the current version (with checksums); the format of `output`
/// decides. Returns the matrix's shape
/// with its stored entries. dnmf::Error names the file for any other pair. `nan_missing`: NaN entries are kept
/// as stored values (what `--missing nan` then fits as missing), where otherwise they are refused as any bad
/// entry is.
template <class T>
MatrixShape convert_matrix(const std::string& input, const std::string& output, bool nan_missing = false);

}  // namespace dnmf::io
