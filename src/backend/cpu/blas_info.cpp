// See dnmf/blas.hpp. The BLAS is asked through symbols looked up at run time, so this file compiles against any
// of the configure-time choices and still names the library that was actually loaded, e.g. when LD_LIBRARY_PATH
// or Debian's alternatives put another build in its place. Two BLAS libraries may be loaded at once (with
// DNMF_BLAS=blis the reference LAPACK pulls in Debian's libblas.so.3, which may be OpenBLAS): the one asked is
// the one whose cblas_dgemm the process calls (dladdr), not whichever exports a version query first.

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>

#include "dnmf/blas.hpp"

namespace dnmf {
namespace {

// The library serving the process's cblas_dgemm, or the global scope when it cannot be told.
void* serving_library() {
  void* dgemm = dlsym(RTLD_DEFAULT, "cblas_dgemm");
  Dl_info where{};
  if (dgemm != nullptr && dladdr(dgemm, &where) != 0 && where.dli_fname != nullptr)
    if (void* handle = dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD)) return handle;
  return RTLD_DEFAULT;
}

template <class F>
F lookup(const char* name) {
  static void* const library = serving_library();
  return reinterpret_cast<F>(dlsym(library, name));
}

std::string widest_vector_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  if (__builtin_cpu_supports("avx")) return "avx";
  return "sse2";
#else
  return "";
#endif
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Kernels that use AVX2 FMA or wider, by the libraries' own names (OpenBLAS's core names, BLIS's
// configurations). A name outside this list on an AVX2 CPU is a fallback: OpenBLAS's Prescott/Core2/Nehalem/
// Sandybridge cores, BLIS's "generic".
bool uses_avx2(const std::string& kernel) {
  static constexpr std::array<std::string_view, 13> fast = {
      "haswell", "zen",        "zen2",           "zen3", "zen4",      "zen5",     "skylakex",
      "skx",     "cooperlake", "sapphirerapids", "knl",  "excavator", "cortexa57"};
  const std::string k = lower(kernel);
  return std::any_of(fast.begin(), fast.end(), [&](std::string_view f) { return k == f; });
}

BlasInfo query() {
  BlasInfo info;
  info.name = "unknown";
  info.cpu_vector_isa = widest_vector_isa();
  if (auto* config = lookup<char* (*)()>("openblas_get_config")) {
    info.name = "OpenBLAS";
    info.config = config();
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64": the version is the second word.
    const auto space = info.config.find(' ');
    if (space != std::string::npos)
      info.version = info.config.substr(space + 1, info.config.find(' ', space + 1) - space - 1);
    if (auto* core = lookup<char* (*)()>("openblas_get_corename")) info.kernel = core();
  } else if (auto* version = lookup<const char* (*)()>("bli_info_get_version_str")) {
    info.name = "BLIS";
    info.version = version();
    auto* query_id = lookup<int (*)()>("bli_arch_query_id");
    auto* arch = lookup<const char* (*)(int)>("bli_arch_string");
    if (query_id != nullptr && arch != nullptr) info.kernel = arch(query_id());
    info.config = "BLIS " + info.version + " " + info.kernel;
  } else if (auto* mkl_version = lookup<void (*)(char*, int)>("MKL_Get_Version_String")) {
    info.name = "MKL";
    std::array<char, 256> text{};
    mkl_version(text.data(), static_cast<int>(text.size()));
    info.config = text.data();
    const auto at = info.config.find("Version ");
    // "... Version 2026.2-Product Build 20260915 ...": the version is what follows, up to '-' or a space.
    if (at != std::string::npos)
      info.version = info.config.substr(at + 8, info.config.find_first_of(" -", at + 8) - at - 8);
    // MKL picks its code path per call and does not name it; it is not a fixed generic kernel.
    info.kernel = "dispatched at run time";
    return info;
  }
  const bool cpu_has_avx2 = info.cpu_vector_isa == "avx2" || info.cpu_vector_isa == "avx512";
  info.generic_kernel = cpu_has_avx2 && !info.kernel.empty() && !uses_avx2(info.kernel);
  return info;
}

}  // namespace

const BlasInfo& blas_info() {
  static const BlasInfo info = query();
  return info;
}

std::string blas_summary() {
  const BlasInfo& b = blas_info();
  std::string s = b.name;
  if (!b.version.empty()) s += " " + b.version;
  if (!b.kernel.empty()) s += ", kernel " + b.kernel;
  if (!b.cpu_vector_isa.empty()) s += " (CPU: " + b.cpu_vector_isa + ")";
  return s;
}

}  // namespace dnmf
