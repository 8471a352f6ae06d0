#include "backend/cuda_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "dnmf/error.hpp"

namespace dnmf::backend {
namespace {

std::atomic<bool> g_requested{false};

// The directory of the shared object holding this function (libdnmf_core.so), with a trailing '/'; empty
// when the loader cannot say.
std::string core_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuda_module_requested), &info) == 0 || info.dli_fname == nullptr) return {};
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash + 1);
}

struct Loaded {
  const CudaModuleApi* api = nullptr;
  std::string error;  // set when api is null
};

// The module beside libdnmf_core.so when it is there (a failure then is about its own dependencies, e.g. a
// missing libcublas, and that is the message to report); otherwise by name, so LD_LIBRARY_PATH can point to
// it. Never closed: kernels made by it may live until exit.
Loaded load() {
  Loaded result;
  const std::string directory = core_directory();
  const std::string beside = directory + kCudaModuleFile;
  const bool use_beside = !directory.empty() && access(beside.c_str(), F_OK) == 0;
  const std::string name = use_beside ? beside : std::string(kCudaModuleFile);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    result.error = why ? why : "dlopen failed";
    return result;
  }
  using Entry = const CudaModuleApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaModuleEntry));
  if (entry == nullptr) {
    result.error = name + " has no entry point " + kCudaModuleEntry;
    return result;
  }
  const CudaModuleApi* api = entry();
  if (api == nullptr || api->version != kCudaModuleVersion) {
    result.error = name + " is version " + std::to_string(api ? api->version : 0) + ", this dnmf needs version " +
                   std::to_string(kCudaModuleVersion) + " (a module from another build)";
    return result;
  }
  result.api = api;
  return result;
}

}  // namespace

const CudaModuleApi* find_cuda_module(std::string* why_not) {
  g_requested.store(true);
  static const Loaded loaded = load();
  if (loaded.api == nullptr && why_not != nullptr)
    *why_not = std::string("cannot load ") + kCudaModuleFile + " (" + loaded.error + ")";
  return loaded.api;
}

const CudaModuleApi& cuda_module() {
  std::string why;
  const CudaModuleApi* api = find_cuda_module(&why);
  if (api == nullptr) throw Error("--backend cuda: " + why);
  return *api;
}

bool cuda_module_requested() { return g_requested.load(); }

}  // namespace dnmf::backend
