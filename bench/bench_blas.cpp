// BLAS libraries compared on the products an NMF iteration makes (issue 14, item 5): the skinny WᵀA and AHᵀ
// (k = 16 and 64) for a column-major A and for a row-major one (numpy's C order, read as Aᵀ), the k x k Gram,
// and a square GEMM as the machine's reference rate. Each library is loaded with dlopen in a child process of its
// own (their OpenMP runtimes and thread pools must not meet), so one run prints every library side by side.
//
//   bench_blas [--threads N] [--repeats R] [--m M --n N] NAME=PATH[:PREFIX] ...
//
// PREFIX is prepended to the CBLAS names (scipy-openblas exports scipy_cblas_dgemm). Without libraries it
// compares the ones this machine has in their usual places (Debian's OpenBLAS and BLIS, and scipy-openblas32 /
// MKL from PyPI when DNMF_BENCH_PYPI_PREFIX names a venv that has them).

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace {

// CBLAS enum values (the standard's), so that no cblas.h is needed: each library is only dlopen'ed.
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;

using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                       int);
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

struct Library {
  std::string name, path, prefix;
};

struct Options {
  int threads = 2, repeats = 5;
  int m = 4000, n = 3000;
  std::vector<Library> libraries;
};

template <class F>
F symbol(void* handle, const std::string& name) {
  return reinterpret_cast<F>(dlsym(handle, name.c_str()));
}

// Sets the library's thread count through whichever call it has; OpenMP-based ones also follow OMP_NUM_THREADS,
// which the parent sets for the child before exec.
void set_threads(void* handle, const std::string& prefix, int threads) {
  for (const char* name : {"openblas_set_num_threads", "bli_thread_set_num_threads", "MKL_Set_Num_Threads"}) {
    const std::string full = (std::strncmp(name, "openblas", 8) == 0 ? prefix : std::string()) + name;
    if (auto* f = symbol<void (*)(int)>(handle, full)) {
      f(threads);
      return;
    }
  }
}

// What the library says it is: OpenBLAS's config and core name, BLIS's version and architecture, MKL's version.
std::string describe(void* handle, const std::string& prefix) {
  if (auto* config = symbol<char* (*)()>(handle, prefix + "openblas_get_config")) {
    std::string text = config();
    if (auto* core = symbol<char* (*)()>(handle, prefix + "openblas_get_corename"))
      text += std::string(" [core ") + core() + "]";
    return text;
  }
  if (auto* version = symbol<const char* (*)()>(handle, "bli_info_get_version_str")) {
    std::string text = std::string("BLIS ") + version();
    auto* query = symbol<int (*)()>(handle, "bli_arch_query_id");
    auto* arch = symbol<const char* (*)(int)>(handle, "bli_arch_string");
    if (query != nullptr && arch != nullptr) text += std::string(" [arch ") + arch(query()) + "]";
    return text;
  }
  if (auto* version = symbol<void (*)(char*, int)>(handle, "MKL_Get_Version_String")) {
    char buffer[256] = {};
    version(buffer, sizeof buffer);
    return buffer;
  }
  return "unknown BLAS";
}

template <class T>
std::vector<T> random_matrix(std::size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <class F>
double best_seconds(int repeats, F&& f) {
  f();  // warm-up: first-touch pages, thread pool start
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// One precision's row of figures: GFLOP/s of the square GEMM, then each product's GFLOP/s and its share of it.
template <class T, class Gemm>
void measure_precision(Gemm gemm, const Options& o, const char* label) {
  const int m = o.m, n = o.n;
  const int square = 2000;
  const auto a = random_matrix<T>(static_cast<std::size_t>(m) * n, 1);
  const auto sa = random_matrix<T>(static_cast<std::size_t>(square) * square, 2);
  std::vector<T> sc(static_cast<std::size_t>(square) * square);
  const double square_rate = 2.0 * square * square * square /
                             best_seconds(o.repeats,
                                          [&] {
                                            gemm(kColMajor, kNoTrans, kNoTrans, square, square, square, T(1), sa.data(),
                                                 square, sa.data(), square, T(0), sc.data(), square);
                                          }) /
                             1e9;
  std::printf("  %s square GEMM %d^3: %.1f GFLOP/s\n", label, square, square_rate);
  for (const int k : {16, 64}) {
    const auto w = random_matrix<T>(static_cast<std::size_t>(m) * k, 3);  // W, m x k column-major
    const auto h = random_matrix<T>(static_cast<std::size_t>(k) * n, 4);  // H, k x n column-major
    std::vector<T> wta(static_cast<std::size_t>(k) * n), aht(static_cast<std::size_t>(m) * k);
    const double flops = 2.0 * m * n * k;
    // A column-major (m x n, lda m): WᵀA = gemm(T, N); AHᵀ = gemm(N, T).
    const double wta_col = best_seconds(o.repeats, [&] {
      gemm(kColMajor, kTrans, kNoTrans, k, n, m, T(1), w.data(), m, a.data(), m, T(0), wta.data(), k);
    });
    const double aht_col = best_seconds(o.repeats, [&] {
      gemm(kColMajor, kNoTrans, kTrans, m, k, n, T(1), a.data(), m, h.data(), k, T(0), aht.data(), m);
    });
    // A row-major (C order): the same bytes are Aᵀ column-major (n x m, ld n). WᵀA = Wᵀ(Aᵀ)ᵀ = gemm(T, T);
    // AHᵀ = (Aᵀ)ᵀHᵀ = gemm(T, T) as well.
    const double wta_row = best_seconds(o.repeats, [&] {
      gemm(kColMajor, kTrans, kTrans, k, n, m, T(1), w.data(), m, a.data(), n, T(0), wta.data(), k);
    });
    const double aht_row = best_seconds(o.repeats, [&] {
      gemm(kColMajor, kTrans, kTrans, m, k, n, T(1), a.data(), n, h.data(), k, T(0), aht.data(), m);
    });
    const auto rate = [&](double s) { return flops / s / 1e9; };
    std::printf(
        "  %s k=%-3d WtA col %6.1f (%3.0f%%)  AHt col %6.1f (%3.0f%%)  WtA row %6.1f (%3.0f%%)  AHt row %6.1f "
        "(%3.0f%%)  GFLOP/s (share of square)\n",
        label, k, rate(wta_col), 100 * rate(wta_col) / square_rate, rate(aht_col), 100 * rate(aht_col) / square_rate,
        rate(wta_row), 100 * rate(wta_row) / square_rate, rate(aht_row), 100 * rate(aht_row) / square_rate);
  }
}

int run_child(const Options& o, const Library& lib) {
  void* handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::printf("%s: cannot load %s (%s)\n", lib.name.c_str(), lib.path.c_str(), dlerror());
    return 1;
  }
  auto* dgemm = symbol<Dgemm>(handle, lib.prefix + "cblas_dgemm");
  auto* sgemm = symbol<Sgemm>(handle, lib.prefix + "cblas_sgemm");
  if (dgemm == nullptr || sgemm == nullptr) {
    std::printf("%s: %s has no %scblas_dgemm/sgemm\n", lib.name.c_str(), lib.path.c_str(), lib.prefix.c_str());
    return 1;
  }
  set_threads(handle, lib.prefix, o.threads);
  std::printf("%s: %s\n  %s\n", lib.name.c_str(), lib.path.c_str(), describe(handle, lib.prefix).c_str());
  measure_precision<double>(dgemm, o, "f64");
  measure_precision<float>(sgemm, o, "f32");
  std::fflush(stdout);
  return 0;
}

std::vector<Library> default_libraries() {
  std::vector<Library> found;
  const auto add = [&](const char* name, const std::string& path, const char* prefix) {
    if (std::filesystem::exists(path)) found.push_back({name, path, prefix});
  };
  add("openblas-debian", "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", "");
  add("blis-debian", "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4", "");
  if (const char* venv = std::getenv("DNMF_BENCH_PYPI_PREFIX")) {
    const std::filesystem::path root(venv);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / "lib")) {
      const std::string file = entry.path().filename().string();
      if (file == "libscipy_openblas.so" && entry.path().string().find("openblas32") != std::string::npos)
        found.push_back({"scipy-openblas32", entry.path().string(), "scipy_"});
    }
    add("mkl-pypi", (root / "lib" / "libmkl_rt.so.3").string(), "");
  }
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool child = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (arg == "--threads")
      o.threads = next();
    else if (arg == "--repeats")
      o.repeats = next();
    else if (arg == "--m")
      o.m = next();
    else if (arg == "--n")
      o.n = next();
    else if (arg == "--child")
      child = true;
    else {
      const auto eq = arg.find('='), colon = arg.find(':', eq == std::string::npos ? 0 : eq);
      if (eq == std::string::npos) {
        std::fprintf(stderr, "bench_blas: '%s' is not NAME=PATH[:PREFIX]\n", arg.c_str());
        return 2;
      }
      o.libraries.push_back({arg.substr(0, eq), arg.substr(eq + 1, colon == std::string::npos ? colon : colon - eq - 1),
                             colon == std::string::npos ? "" : arg.substr(colon + 1)});
    }
  }
  if (o.threads < 1 || o.repeats < 1 || o.m < 64 || o.n < 64) {
    std::fprintf(stderr, "bench_blas: --threads and --repeats must be >= 1, --m and --n >= 64\n");
    return 2;
  }
  if (child) return o.libraries.size() == 1 ? run_child(o, o.libraries[0]) : 2;
  if (o.libraries.empty()) o.libraries = default_libraries();
  std::printf("BLAS on dnmf's products: A %dx%d, %d threads, best of %d\n", o.m, o.n, o.threads, o.repeats);
  int failures = 0;
  for (const Library& lib : o.libraries) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string threads = std::to_string(o.threads);
      setenv("OMP_NUM_THREADS", threads.c_str(), 1);
      setenv("MKL_THREADING_LAYER", "GNU", 0);
      const std::string spec = lib.name + "=" + lib.path + (lib.prefix.empty() ? "" : ":" + lib.prefix);
      const std::string m = std::to_string(o.m), n = std::to_string(o.n), repeats = std::to_string(o.repeats);
      execl("/proc/self/exe", argv[0], "--child", "--threads", threads.c_str(), "--repeats", repeats.c_str(), "--m",
            m.c_str(), "--n", n.c_str(), spec.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
