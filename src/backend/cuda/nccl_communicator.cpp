#include "backend/cuda/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/check.hpp"
#include "backend/cuda/device_buffer.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {
namespace {

// NCCL's entry points, resolved from the shared library at run time.
struct NcclApi {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommSplit) split = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  std::string error;  // why loading failed; empty when every symbol was found
};

template <class F>
bool resolve(void* library, const char* symbol, F& out, std::string& error) {
  out = reinterpret_cast<F>(dlsym(library, symbol));
  if (out == nullptr && error.empty()) error = std::string("symbol ") + symbol + " missing";
  return out != nullptr;
}

// Candidates in order: $DNMF_NCCL_LIBRARY, the loader's search path, the library found at configure time.
NcclApi load() {
  NcclApi api;
  std::vector<std::string> names;
  if (const char* env = std::getenv("DNMF_NCCL_LIBRARY"); env != nullptr && *env != '\0') names.emplace_back(env);
  names.emplace_back("libnccl.so.2");
#ifdef DNMF_NCCL_LIBRARY_PATH
  names.emplace_back(DNMF_NCCL_LIBRARY_PATH);
#endif
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : names) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + (why != nullptr ? std::string(why) : name);
  }
  if (library == nullptr) {
    api.error = "cannot load NCCL (" + tried + "); set DNMF_NCCL_LIBRARY to libnccl.so.2's path";
    return api;
  }
  std::string& e = api.error;
  resolve(library, "ncclGetVersion", api.get_version, e);
  resolve(library, "ncclGetErrorString", api.error_string, e);
  resolve(library, "ncclGetUniqueId", api.get_unique_id, e);
  resolve(library, "ncclCommInitRank", api.init_rank, e);
  resolve(library, "ncclCommSplit", api.split, e);
  resolve(library, "ncclCommDestroy", api.destroy, e);
  resolve(library, "ncclCommAbort", api.abort, e);
  resolve(library, "ncclAllReduce", api.all_reduce, e);
  resolve(library, "ncclReduceScatter", api.reduce_scatter, e);
  resolve(library, "ncclAllGather", api.all_gather, e);
  resolve(library, "ncclBroadcast", api.broadcast, e);
  resolve(library, "ncclSend", api.send, e);
  resolve(library, "ncclRecv", api.recv, e);
  resolve(library, "ncclGroupStart", api.group_start, e);
  resolve(library, "ncclGroupEnd", api.group_end, e);
  if (!e.empty()) e = "NCCL library too old or incomplete: " + e;
  return api;  // the library stays loaded for the life of the process
}

const NcclApi& api() {
  static const NcclApi instance = load();
  return instance;
}

const NcclApi& checked_api() {
  const NcclApi& a = api();
  if (!a.error.empty()) throw Error("nccl: " + a.error);
  return a;
}

void check(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  const char* what = api().error_string != nullptr ? api().error_string(status) : "unknown error";
  throw Error(std::string("nccl: ") + call + " failed: " + what + " (" + file + ":" + std::to_string(line) + ")");
}

#define DNMF_NCCL_CHECK(call) check((call), #call, __FILE__, __LINE__)

ncclDataType_t nccl_type(Scalar s) {
  switch (s) {
    case Scalar::f32:
      return ncclFloat32;
    case Scalar::f64:
      return ncclFloat64;
    case Scalar::i64:
      return ncclInt64;
    case Scalar::u8:
      return ncclUint8;
  }
  return ncclUint8;
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

const char* at(const void* base, std::size_t elements, Scalar type) {
  return static_cast<const char*>(base) + elements * size_of(type);
}
char* at(void* base, std::size_t elements, Scalar type) { return static_cast<char*>(base) + elements * size_of(type); }

}  // namespace

struct NcclCommunicator::Scratch {
  backend::cuda::DeviceBuffer buffer;
};

bool NcclCommunicator::available(std::string* why_not) {
  if (api().error.empty()) return true;
  if (why_not != nullptr) *why_not = api().error;
  return false;
}

std::string NcclCommunicator::version() {
  int v = 0;
  DNMF_NCCL_CHECK(checked_api().get_version(&v));
  // Codes since 2.9 are major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

NcclCommunicator::NcclCommunicator(Communicator& host, void* stream)
    : host_(&host), stream_(stream), rank_(host.rank()), size_(host.size()), scratch_(std::make_unique<Scratch>()) {
  // Every rank takes part in the host collectives even when its own NCCL is missing, or the others would hang
  // in initialisation: the failures are summed first and the job fails together.
  ncclUniqueId id{};
  std::string why;
  std::int64_t failed = available(&why) ? 0 : 1;
  if (rank_ == 0 && failed == 0 && api().get_unique_id(&id) != ncclSuccess) {
    failed = 1;
    why = "ncclGetUniqueId failed";
  }
  failed = host.sum(failed);
  if (failed > 0)
    throw Error("nccl: " + std::to_string(failed) + " of " + std::to_string(size_) + " ranks cannot start NCCL" +
                (why.empty() ? std::string() : " (here: " + why + ")"));
  host.broadcast(&id, sizeof(id), Scalar::u8, 0);
  const NcclApi& a = checked_api();
  ncclComm_t comm = nullptr;
  DNMF_NCCL_CHECK(a.init_rank(&comm, size_, id, rank_));
  comm_ = comm;
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> host, ncclComm* comm, void* stream)
    : owned_host_(std::move(host)),
      host_(owned_host_.get()),
      comm_(comm),
      stream_(stream),
      rank_(host_->rank()),
      size_(host_->size()),
      scratch_(std::make_unique<Scratch>()) {}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) (void)api().destroy(comm_);  // waits for the operations still queued on it
}

void* NcclCommunicator::scratch(std::size_t bytes) { return scratch_->buffer.reserve(bytes); }

void NcclCommunicator::barrier() {
  DNMF_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
  host_->barrier();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  if (color < 0) throw Error("internal: nccl split needs a colour >= 0, got " + std::to_string(color));
  std::unique_ptr<Communicator> host = host_->split(color, key);
  ncclComm_t child = nullptr;
  DNMF_NCCL_CHECK(checked_api().split(comm_, color, key, &child, nullptr));
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(host), child, stream_));
}

void NcclCommunicator::abort(int code) {
  if (comm_ != nullptr && api().abort != nullptr) (void)api().abort(comm_);
  comm_ = nullptr;
  host_->abort(code);
  std::abort();  // not reached: the host communicator's abort does not return
}

void NcclCommunicator::do_allreduce(void* data, std::size_t count, Scalar type, bool max) {
  if (count == 0) return;
  DNMF_NCCL_CHECK(
      checked_api().all_reduce(data, data, count, nccl_type(type), max ? ncclMax : ncclSum, comm_, as_stream(stream_)));
}

void NcclCommunicator::do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                         Scalar type) {
  const PaddedPieces p = padded_pieces(counts);
  if (p.piece == 0) return;
  const NcclApi& a = checked_api();
  const ncclDataType_t t = nccl_type(type);
  if (p.even) {
    DNMF_NCCL_CHECK(a.reduce_scatter(send, recv, p.piece, t, ncclSum, comm_, as_stream(stream_)));
    return;
  }
  // Pack every rank's piece at a stride of the largest, reduce-scatter that, unpack this rank's piece.
  const std::size_t n = to_size(size_), e = size_of(type);
  char* padded = static_cast<char*>(scratch((n + 1) * p.piece * e));
  char* mine = padded + n * p.piece * e;
  for (std::size_t r = 0; r < n; ++r)
    if (counts[r] > 0)
      DNMF_CUDA_CHECK(cudaMemcpyAsync(padded + r * p.piece * e, at(send, p.offsets[r], type), counts[r] * e,
                                      cudaMemcpyDeviceToDevice, as_stream(stream_)));
  DNMF_NCCL_CHECK(a.reduce_scatter(padded, mine, p.piece, t, ncclSum, comm_, as_stream(stream_)));
  const std::size_t own = counts[to_size(rank_)];
  if (own > 0) DNMF_CUDA_CHECK(cudaMemcpyAsync(recv, mine, own * e, cudaMemcpyDeviceToDevice, as_stream(stream_)));
}

void NcclCommunicator::do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) {
  const PaddedPieces p = padded_pieces(counts);
  if (p.piece == 0) return;
  const NcclApi& a = checked_api();
  const ncclDataType_t t = nccl_type(type);
  if (p.even) {
    DNMF_NCCL_CHECK(a.all_gather(send, recv, p.piece, t, comm_, as_stream(stream_)));
    return;
  }
  const std::size_t n = to_size(size_), e = size_of(type);
  char* mine = static_cast<char*>(scratch((n + 1) * p.piece * e));
  char* padded = mine + p.piece * e;
  const std::size_t own = counts[to_size(rank_)];
  if (own > 0) DNMF_CUDA_CHECK(cudaMemcpyAsync(mine, send, own * e, cudaMemcpyDeviceToDevice, as_stream(stream_)));
  DNMF_NCCL_CHECK(a.all_gather(mine, padded, p.piece, t, comm_, as_stream(stream_)));
  for (std::size_t r = 0; r < n; ++r)
    if (counts[r] > 0)
      DNMF_CUDA_CHECK(cudaMemcpyAsync(at(recv, p.offsets[r], type), padded + r * p.piece * e, counts[r] * e,
                                      cudaMemcpyDeviceToDevice, as_stream(stream_)));
}

void NcclCommunicator::do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type,
                                 int root) {
  const PaddedPieces p = padded_pieces(counts);
  const NcclApi& a = checked_api();
  const ncclDataType_t t = nccl_type(type);
  const std::size_t own = counts[to_size(rank_)];
  if (rank_ == root && own > 0)
    DNMF_CUDA_CHECK(cudaMemcpyAsync(at(recv, p.offsets[to_size(root)], type), send, own * size_of(type),
                                    cudaMemcpyDeviceToDevice, as_stream(stream_)));
  DNMF_NCCL_CHECK(a.group_start());
  ncclResult_t status = ncclSuccess;
  if (rank_ == root) {
    for (int r = 0; r < size_ && status == ncclSuccess; ++r) {
      const auto q = to_size(r);
      if (r != root && counts[q] > 0)
        status = a.recv(at(recv, p.offsets[q], type), counts[q], t, r, comm_, as_stream(stream_));
    }
  } else if (own > 0) {
    status = a.send(send, own, t, root, comm_, as_stream(stream_));
  }
  const ncclResult_t end = a.group_end();
  DNMF_NCCL_CHECK(status);
  DNMF_NCCL_CHECK(end);
}

void NcclCommunicator::do_broadcast(void* data, std::size_t count, Scalar type, int root) {
  if (count == 0) return;
  DNMF_NCCL_CHECK(checked_api().broadcast(data, data, count, nccl_type(type), root, comm_, as_stream(stream_)));
}

void NcclCommunicator::do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                                    const std::vector<std::size_t>& recv_counts, Scalar type) {
  const PaddedPieces s = padded_pieces(send_counts), r = padded_pieces(recv_counts);
  const NcclApi& a = checked_api();
  const ncclDataType_t t = nccl_type(type);
  const auto me = to_size(rank_);
  if (send_counts[me] != recv_counts[me])
    throw Error("internal: alltoallv keeps " + std::to_string(send_counts[me]) + " elements but expects " +
                std::to_string(recv_counts[me]) + " back");
  if (send_counts[me] > 0)
    DNMF_CUDA_CHECK(cudaMemcpyAsync(at(recv, r.offsets[me], type), at(send, s.offsets[me], type),
                                    send_counts[me] * size_of(type), cudaMemcpyDeviceToDevice, as_stream(stream_)));
  DNMF_NCCL_CHECK(a.group_start());
  ncclResult_t status = ncclSuccess;
  for (int q = 0; q < size_ && status == ncclSuccess; ++q) {
    const auto i = to_size(q);
    if (i == me) continue;
    if (send_counts[i] > 0)
      status = a.send(at(send, s.offsets[i], type), send_counts[i], t, q, comm_, as_stream(stream_));
    if (status == ncclSuccess && recv_counts[i] > 0)
      status = a.recv(at(recv, r.offsets[i], type), recv_counts[i], t, q, comm_, as_stream(stream_));
  }
  const ncclResult_t end = a.group_end();
  DNMF_NCCL_CHECK(status);
  DNMF_NCCL_CHECK(end);
}

}  // namespace dnmf::dist
