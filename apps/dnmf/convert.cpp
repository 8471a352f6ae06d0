// `dnmf convert IN OUT.dcsr`: any matrix file the readers take (.mtx, HDF5 CSR or dense, .npy) into the
// project's binary CSR (.dcsr, docs/formats.md), which streaming reads in nnz-balanced row ranges with three
// preads a tile; and `dnmf convert IN.dcsr OUT.mtx` back. The matrix is held in memory once while converting.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/dcsr.hpp"

namespace dnmf::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  std::string precision = "f64";
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Dense to CSR, zeros dropped.
template <class T>
CsrMatrix<T> to_csr(const DenseMatrix<T>& d) {
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<T> values;
  for (index_t i = 0; i < d.rows(); ++i) {
    for (index_t j = 0; j < d.cols(); ++j)
      if (d(i, j) != T(0)) {
        indices.push_back(static_cast<col_index_t>(j));
        values.push_back(d(i, j));
      }
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  return {d.rows(), d.cols(), std::move(indptr), std::move(indices), std::move(values)};
}

template <class T>
int convert(const ConvertArgs& args) {
  if (ends_with(args.input, ".dcsr")) {
    if (!ends_with(args.output, ".mtx")) throw Error(args.output + ": a .dcsr file converts to .mtx");
    const CsrMatrix<T> a = io::read_dcsr<T>(args.input);
    io::write_mtx<T>(args.output, a.view());
    std::printf("%s: %lldx%lld, %lld entries -> %s\n", args.input.c_str(), static_cast<long long>(a.rows()),
                static_cast<long long>(a.cols()), static_cast<long long>(a.nnz()), args.output.c_str());
    return 0;
  }
  if (!ends_with(args.output, ".dcsr"))
    throw Error(args.output + ": the output must end in .dcsr (or convert a .dcsr to .mtx)");
  dist::SingleCommunicator self;
  const io::MatrixShape shape = io::read_shape(args.input, self);
  io::LocalBlock<T> block = io::read_block<T>(args.input, {0, shape.rows}, {0, shape.cols}, self);
  if (!block.sparse) block.csr = to_csr(block.dense);
  const CsrView<T> a = block.csr.view();
  io::write_dcsr<T>(args.output, a);
  std::printf("%s: %lldx%lld, %lld entries -> %s (values %s)\n", args.input.c_str(), static_cast<long long>(a.rows),
              static_cast<long long>(a.cols), static_cast<long long>(a.nnz()), args.output.c_str(),
              args.precision.c_str());
  return 0;
}

}  // namespace

Command add_convert(CLI::App& parent) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* app = parent.add_subcommand(
      "convert", "rewrite a matrix file as .dcsr, the binary CSR that --memory-budget streams (or .dcsr to .mtx)");
  app->add_option("IN", args->input, "input matrix (.mtx, .h5, .npy; or .dcsr)")->required();
  app->add_option("OUT", args->output, "output file (.dcsr; or .mtx from a .dcsr)")->required();
  app->add_option("--precision", args->precision, "value type stored in the .dcsr file")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  return {app, [args] { return args->precision == "f32" ? convert<float>(*args) : convert<double>(*args); }};
}

}  // namespace dnmf::cli
