// A dense matrix copied into a backend's memory (device memory for cuda), freed with the object.
#pragma once

#include <algorithm>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::test {

template <class T>
class BackendMatrix {
 public:
  BackendMatrix(backend::Kernels<T>& kernels, const DenseMatrix<T>& host)
      : kernels_(kernels), rows_(host.rows()), cols_(host.cols()), data_(kernels.allocate(size())) {
    kernels_.copy_to_backend(host.data(), data_, size());
  }
  BackendMatrix(const BackendMatrix&) = delete;
  BackendMatrix& operator=(const BackendMatrix&) = delete;
  ~BackendMatrix() { kernels_.deallocate(data_); }

  [[nodiscard]] backend::View<T> view() const { return {data_, rows_, cols_, std::max<index_t>(rows_, 1)}; }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] DenseMatrix<T> download() const {
    DenseMatrix<T> host(rows_, cols_);
    kernels_.copy_to_host(data_, host.data(), size());
    return host;
  }

 private:
  [[nodiscard]] std::size_t size() const { return to_size(rows_ * cols_); }
  backend::Kernels<T>& kernels_;
  index_t rows_, cols_;
  T* data_;
};

}  // namespace dnmf::test
