#include "backend/cuda/check.hpp"

#include <string>

#include "dnmf/error.hpp"

namespace dnmf::backend::cuda {

void fail(const char* call, const char* what, const char* file, int line) {
  throw Error(std::string("CUDA: ") + call + " failed: " + (what ? what : "unknown error") + " (" + file + ":" +
              std::to_string(line) + ")");
}

}  // namespace dnmf::backend::cuda
