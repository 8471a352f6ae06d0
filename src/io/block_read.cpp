// Interim block reads: every rank reads through the whole-file readers and keeps its block. Correct, but a
// rank transiently holds more than its block; the collective readers replace this.
#include "io/block_read.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"

namespace dnmf::io {
namespace {

MatrixShape shape_here(const std::string& path) {
  MatrixShape s;
  if (format_of(path) == FileFormat::npy) {
    const NpyHeader h = read_npy_header(path);
    s.rows = h.rows;
    s.cols = h.cols;
    s.stored = h.rows * h.cols;
    return s;
  }
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '%') continue;
    std::istringstream fields(line);
    long long r = 0, c = 0, nnz = 0;
    if (!(fields >> r >> c >> nnz)) throw Error(path + ": malformed Matrix Market size line '" + line + "'");
    s.rows = r;
    s.cols = c;
    s.stored = nnz;
    s.sparse = true;
    return s;
  }
  throw Error(path + ": no Matrix Market size line");
}

}  // namespace

MatrixShape read_shape(const std::string& path, dist::Communicator& comm) {
  // Rank 0 decides; the others learn the answer or the error's text.
  std::string error;
  MatrixShape s;
  if (comm.rank() == 0) {
    try {
      s = shape_here(path);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  long long fields[5] = {s.rows, s.cols, s.stored, s.sparse ? 1 : 0, static_cast<long long>(error.size())};
  comm.broadcast(fields, 5, dist::Scalar::i64, 0);
  if (fields[4] > 0) {
    error.resize(static_cast<std::size_t>(fields[4]));
    comm.broadcast(error.data(), error.size(), dist::Scalar::u8, 0);
    throw Error(error);
  }
  return {fields[0], fields[1], fields[2], fields[3] != 0};
}

template <class T>
LocalBlock<T> read_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm) {
  (void)comm;
  LocalBlock<T> block;
  if (format_of(path) == FileFormat::npy) {
    const DenseMatrix<T> band = read_npy_rows<T>(path, rows.first, rows.last);
    block.dense = DenseMatrix<T>(rows.size(), cols.size());
    for (index_t j = 0; j < cols.size(); ++j)
      for (index_t i = 0; i < rows.size(); ++i) block.dense(i, j) = band(i, cols.first + j);
    for (index_t j = 0; j < cols.size(); ++j)
      for (index_t i = 0; i < rows.size(); ++i) {
        const double v = static_cast<double>(block.dense(i, j));
        if (!(v >= 0) || v == std::numeric_limits<double>::infinity())
          throw Error(path + ": entry at row " + std::to_string(rows.first + i) + ", column " +
                      std::to_string(cols.first + j) + " is " + std::to_string(v) +
                      " (NMF needs finite non-negative entries)");
      }
    return block;
  }
  const CsrMatrix<T> whole = read_mtx<T>(path);
  check_nonnegative<T>(whole.view(), path);
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<T> values;
  for (index_t i = rows.first; i < rows.last; ++i) {
    for (index_t p = whole.indptr()[static_cast<std::size_t>(i)]; p < whole.indptr()[static_cast<std::size_t>(i + 1)];
         ++p) {
      const index_t j = whole.indices()[static_cast<std::size_t>(p)];
      if (j < cols.first || j >= cols.last) continue;
      indices.push_back(static_cast<col_index_t>(j - cols.first));
      values.push_back(whole.values()[static_cast<std::size_t>(p)]);
    }
    indptr.push_back(static_cast<index_t>(indices.size()));
  }
  block.sparse = true;
  block.csr = CsrMatrix<T>(rows.size(), cols.size(), std::move(indptr), std::move(indices), std::move(values));
  return block;
}

template LocalBlock<float> read_block<float>(const std::string&, dist::Range, dist::Range, dist::Communicator&);
template LocalBlock<double> read_block<double>(const std::string&, dist::Range, dist::Range, dist::Communicator&);

}  // namespace dnmf::io
