// A source's whole matrix in memory on this process, as stored, for the masked paths (which hold A and its
// mask whole on one process).
#pragma once

#include "dnmf/io.hpp"
#include "dnmf/source.hpp"
#include "io/block_read.hpp"

namespace dnmf::api {

/// A source's whole matrix in precision T, as stored (Aᵀ for a transposed source), with what owns a copy.
/// Files are read without the entry check (NaN may be missing; entries are checked against the mask later).
template <class T>
struct Held {
  io::LoadedMatrix<T> loaded;
  io::LocalBlock<T> block;
  MatrixRef<T> ref;
};

template <class T>
inline Held<T> hold(const Source& source) {
  Held<T> h;
  if (source.is_file()) {
    h.loaded = io::load_matrix<T>(source.name());
    h.ref = h.loaded.ref();
  } else if (const MatrixRef<T>* same = source.stored<T>()) {
    h.ref = *same;
  } else {
    const auto slice = [&](const auto& other) {
      const io::MatrixShape s = io::shape_of(other);
      h.block = io::slice_block<T>(other, dist::Range{0, s.rows}, dist::Range{0, s.cols});
    };
    if (const auto* f = source.stored<float>()) {
      slice(*f);
    } else {
      slice(*source.stored<double>());
    }
    h.ref = h.block.ref();
  }
  return h;
}

}  // namespace dnmf::api
