// main() of the MPI test programs: MPI comes up through dist::world() (the library's own path), rank 0
// prints GoogleTest's report, the other ranks print only their failures (prefixed with the rank), and the
// exit status is the worst over all ranks so a failure on any rank fails the CTest test.
#include <gtest/gtest.h>

#include <cstdio>

#include "dist/communicator.hpp"

namespace {

class RankFailurePrinter final : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  dnmf::dist::Communicator& world = dnmf::dist::world();
  if (world.rank() != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(world.rank()));
  }
  const int status = RUN_ALL_TESTS();
  return world.max(static_cast<std::int64_t>(status)) != 0 ? 1 : 0;
}
