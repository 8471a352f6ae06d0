// Test inputs: .npz archives packed with libzip the way numpy.savez and scipy.sparse.save_npz write them (members
// stored or deflated), from .npy images built by hand (any dtype and shape, the 0-D byte string scipy writes
// included) or read back from the library's writer. Tests that use it link dnmf::zip.
#pragma once

#include <gtest/gtest.h>
#include <zip.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::test {

using Members = std::vector<std::pair<std::string, std::string>>;

/// Packs `members` (name, bytes) into a zip archive at `path`, stored or deflated, with libzip.
inline void write_zip(const std::string& path, const Members& members, bool deflate) {
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  ASSERT_NE(archive, nullptr) << path << ": libzip error " << code;
  for (const auto& [name, bytes] : members) {
    // libzip reads the buffer at zip_close, while `members` is still alive.
    zip_source_t* source = zip_source_buffer(archive, bytes.data(), bytes.size(), 0);
    ASSERT_NE(source, nullptr);
    const zip_int64_t index = zip_file_add(archive, name.c_str(), source, ZIP_FL_OVERWRITE);
    ASSERT_GE(index, 0) << name;
    ASSERT_EQ(
        zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0),
        0);
  }
  ASSERT_EQ(zip_close(archive), 0) << zip_strerror(archive);
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A .npy image with header dict {'descr': descr, 'fortran_order': False, 'shape': shape} padded as numpy pads it.
inline std::string npy_image(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string image("\x93NUMPY\x01\x00", 8);
  image += static_cast<char>(dict.size() & 0xff);
  image += static_cast<char>(dict.size() >> 8);
  return image + dict + data;
}

template <class S>
std::string raw(const std::vector<S>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(S));
}

template <class S>
std::string vector_image(const std::vector<S>& values) {
  const char* descr = std::is_same_v<S, double>         ? "<f8"
                      : std::is_same_v<S, float>        ? "<f4"
                      : std::is_same_v<S, std::int32_t> ? "<i4"
                                                        : "<i8";
  return npy_image(descr, "(" + std::to_string(values.size()) + ",)", raw(values));
}

/// A scipy sparse matrix's members as save_npz writes them (format a 0-D byte string).
template <class V, class I, class P>
Members scipy_members(const std::string& format, index_t rows, index_t cols, const std::vector<V>& data,
                      const std::vector<I>& indices, const std::vector<P>& indptr) {
  return {{"indices.npy", vector_image(indices)},
          {"indptr.npy", vector_image(indptr)},
          {"format.npy", npy_image("|S3", "()", format)},
          {"shape.npy", vector_image(std::vector<std::int64_t>{rows, cols})},
          {"data.npy", vector_image(data)}};
}

/// The compressed storage of `a` by rows (CSR) or by columns (CSC), with index types I (indices) and P (indptr).
template <class V, class I, class P, class T>
Members compressed_members(const DenseMatrix<T>& a, bool by_columns) {
  std::vector<V> data;
  std::vector<I> indices;
  std::vector<P> indptr{0};
  const index_t lines = by_columns ? a.cols() : a.rows(), width = by_columns ? a.rows() : a.cols();
  for (index_t line = 0; line < lines; ++line) {
    for (index_t k = 0; k < width; ++k) {
      const T value = by_columns ? a(k, line) : a(line, k);
      if (value == T(0)) continue;
      data.push_back(static_cast<V>(value));
      indices.push_back(static_cast<I>(k));
    }
    indptr.push_back(static_cast<P>(data.size()));
  }
  return scipy_members(by_columns ? "csc" : "csr", a.rows(), a.cols(), data, indices, indptr);
}

}  // namespace dnmf::test
