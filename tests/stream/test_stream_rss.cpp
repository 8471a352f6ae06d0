// The budget is a promise: a child process streams a file 8 times its budget, and its peak RSS (getrusage of
// the child, through wait4) stays within budget + 5%.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir_test.hpp"

extern char** environ;

namespace dnmf::stream {
namespace {

// Writes an m x n Fortran-order float64 .npy column by column (the test process never holds the matrix).
void write_big_npy(const std::string& path, long long m, long long n) {
  std::string dict =
      "{'descr': '<f8', 'fortran_order': True, 'shape': (" + std::to_string(m) + ", " + std::to_string(n) + "), }";
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((unpadded + 63) / 64 * 64 - unpadded, ' ');
  dict += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(dict.size() & 0xff), static_cast<char>(dict.size() >> 8)};
  out.write(len, 2);
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  std::vector<double> column(static_cast<std::size_t>(m));
  for (long long j = 0; j < n; ++j) {
    // Rank-2 structure plus a small ripple: a real factorisation, entries all positive.
    for (long long i = 0; i < m; ++i)
      column[static_cast<std::size_t>(i)] = 1.0 + 0.5 * static_cast<double>(i % 17) * static_cast<double>(j % 5) +
                                            0.01 * static_cast<double>((i * j) % 7);
    out.write(reinterpret_cast<const char*>(column.data()), static_cast<std::streamsize>(m * 8));
  }
  ASSERT_TRUE(out.good());
}

struct Child {
  int status = -1;
  long long peak_rss = 0;  // bytes
  std::string output;
};

Child run_child(const std::vector<std::string>& args, const std::string& output_path) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  Child child;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return child;
  rusage usage{};
  wait4(pid, &child.status, 0, &usage);
  child.peak_rss = static_cast<long long>(usage.ru_maxrss) * 1024;
  std::ifstream in(output_path);
  std::getline(in, child.output);
  return child;
}

class RssPromise : public test::TempDirTest {};

TEST_F(RssPromise, StreamedPeakStaysWithinTheBudget) {
  const long long budget = 48LL << 20;
  const long long m = 4096, n = 12288;  // 384 MiB: 8x the budget
  write_big_npy(path("big.npy"), m, n);
  ASSERT_GE(m * n * 8, 8 * budget);
  const Child child = run_child({DNMF_RSS_PROBE, path("big.npy"), std::to_string(budget), "4", "3"}, path("out.txt"));
  ASSERT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.output;
  EXPECT_NE(child.output.find("streamed=1"), std::string::npos) << child.output;
  EXPECT_LE(static_cast<double>(child.peak_rss), 1.05 * static_cast<double>(budget))
      << "peak " << child.peak_rss << " bytes; " << child.output;
  // The run used the budget (not a trivially small ring): its peak is well above the baseline.
  EXPECT_GT(static_cast<double>(child.peak_rss), 0.5 * static_cast<double>(budget)) << child.output;
  std::printf("%s\nchild peak RSS %.1f MiB for a budget of %.1f MiB\n", child.output.c_str(),
              static_cast<double>(child.peak_rss) / 1048576.0, static_cast<double>(budget) / 1048576.0);
}

}  // namespace
}  // namespace dnmf::stream
