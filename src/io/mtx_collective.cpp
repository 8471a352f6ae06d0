// The collective Matrix Market block reader; see mtx_collective.hpp. Steps: header on rank 0 (broadcast), all
// ranks' ranges (allgather), parse of this rank's byte range straight into per-destination buckets, one
// allgather of line/entry counts and failures (line numbers, entry count check, the first failure chosen the
// same way on every rank), the exchange (alltoallv), and the local CSR.
#include "io/mtx_collective.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/collective_failure.hpp"
#include "io/csr_build.hpp"
#include "io/input_file.hpp"
#include "io/mtx_parse.hpp"

namespace dnmf::io {
namespace {

using detail::InputFile;

// ---------------------------------------------------------------------------------------------
// Header: read on rank 0, the same answer (or error) everywhere.

mtx::Header broadcast_header(const std::string& path, dist::Communicator& comm) {
  std::optional<Error> failure;
  mtx::Header h;
  if (comm.rank() == 0) {
    try {
      h = mtx::read_header(InputFile(path));
    } catch (const Error& e) {
      failure = e;
    }
  }
  if (comm.size() == 1) {
    if (failure) throw CollectiveError(*failure);
    return h;
  }
  std::int64_t fields[8] = {
      static_cast<std::int64_t>(h.field),       h.symmetric ? 1 : 0, h.rows, h.cols, h.entries, h.size_line,
      static_cast<std::int64_t>(h.data_offset), failure ? 1 : 0};
  comm.broadcast(fields, 8, dist::Scalar::i64, 0);
  if (fields[7] != 0)
    detail::raise_everywhere(comm, 0, failure ? failure->what() : std::string(),
                             failure ? failure->kind() : ErrorKind::general);
  h.field = static_cast<mtx::Field>(fields[0]);
  h.symmetric = fields[1] != 0;
  h.rows = fields[2];
  h.cols = fields[3];
  h.entries = fields[4];
  h.size_line = fields[5];
  h.data_offset = static_cast<std::uint64_t>(fields[6]);
  return h;
}

// ---------------------------------------------------------------------------------------------
// Every rank's block, and which blocks hold an entry.

struct Block {
  index_t r0, r1, c0, c1;
  [[nodiscard]] bool holds(index_t i, index_t j) const { return i >= r0 && i < r1 && j >= c0 && j < c1; }
  [[nodiscard]] bool empty() const { return r0 >= r1 || c0 >= c1; }
};

std::vector<Block> gather_blocks(const std::string& path, dist::Range rows, dist::Range cols, const mtx::Header& h,
                                 dist::Communicator& comm) {
  const auto p = to_size(comm.size());
  const std::int64_t mine[4] = {rows.first, rows.last, cols.first, cols.last};
  std::vector<std::int64_t> all(4 * p);
  if (p == 1) {
    std::copy(mine, mine + 4, all.begin());
  } else {
    comm.allgather(mine, all.data(), std::vector<std::size_t>(p, 4), dist::Scalar::i64);
  }
  std::vector<Block> blocks(p);
  for (std::size_t q = 0; q < p; ++q) {
    const Block b{all[4 * q], all[4 * q + 1], all[4 * q + 2], all[4 * q + 3]};
    // Every rank checks every block, so all reach the same verdict without talking.
    if (b.r0 < 0 || b.r0 > b.r1 || b.r1 > h.rows || b.c0 < 0 || b.c0 > b.c1 || b.c1 > h.cols) {
      throw CollectiveError(path + ": rank " + std::to_string(q) + " asked for rows [" + std::to_string(b.r0) + ", " +
                            std::to_string(b.r1) + ") x columns [" + std::to_string(b.c0) + ", " +
                            std::to_string(b.c1) + ") of a " + std::to_string(h.rows) + "x" + std::to_string(h.cols) +
                            " matrix");
    }
    if (b.c1 - b.c0 > std::numeric_limits<col_index_t>::max()) {
      throw CollectiveError(path + ": rank " + std::to_string(q) + "'s block is " + std::to_string(b.c1 - b.c0) +
                            " columns wide; local column indices are 32-bit");
    }
    blocks[q] = b;
  }
  return blocks;
}

/// Finds the ranks whose block holds (i, j). The row and column breakpoints of all blocks cut the matrix into
/// cells; each cell lists the ranks covering it (one per cell on a grid). When that table would be large
/// (overlapping, unaligned blocks), a list of ranks per row segment is searched instead.
class Router {
 public:
  Router(const std::vector<Block>& blocks, index_t m, index_t n) : blocks_(blocks) {
    row_bp_ = breakpoints(m, &Block::r0, &Block::r1);
    col_bp_ = breakpoints(n, &Block::c0, &Block::c1);
    const std::size_t row_segments = row_bp_.size() - 1, col_segments = col_bp_.size() - 1;
    std::size_t listed = 0;
    for (const Block& b : blocks_) {
      if (!b.empty()) listed += segments(row_bp_, b.r0, b.r1) * segments(col_bp_, b.c0, b.c1);
    }
    constexpr std::size_t kTableLimit = std::size_t{1} << 22;
    use_table_ = row_segments * col_segments <= kTableLimit && listed <= kTableLimit;
    if (use_table_) {
      build(row_segments * col_segments, [&](const Block& b, auto&& add) {
        for (std::size_t r = segment(row_bp_, b.r0); r < segment(row_bp_, b.r1); ++r)
          for (std::size_t c = segment(col_bp_, b.c0); c < segment(col_bp_, b.c1); ++c) add(r * col_segments + c);
      });
    } else {
      build(row_segments, [&](const Block& b, auto&& add) {
        for (std::size_t r = segment(row_bp_, b.r0); r < segment(row_bp_, b.r1); ++r) add(r);
      });
    }
  }

  /// Calls `to(q)` for every rank q whose block holds (i, j), in rank order.
  template <class F>
  void route(index_t i, index_t j, F&& to) const {
    const std::size_t r = find(row_bp_, i);
    if (use_table_) {
      const std::size_t cell = r * (col_bp_.size() - 1) + find(col_bp_, j);
      for (std::size_t k = start_[cell]; k < start_[cell + 1]; ++k) to(ranks_[k]);
      return;
    }
    for (std::size_t k = start_[r]; k < start_[r + 1]; ++k) {
      if (blocks_[to_size(ranks_[k])].holds(i, j)) to(ranks_[k]);
    }
  }

 private:
  std::vector<index_t> breakpoints(index_t extent, index_t Block::*first, index_t Block::*last) const {
    std::vector<index_t> bp{0, extent};
    for (const Block& b : blocks_) {
      bp.push_back(b.*first);
      bp.push_back(b.*last);
    }
    std::sort(bp.begin(), bp.end());
    bp.erase(std::unique(bp.begin(), bp.end()), bp.end());
    if (bp.size() == 1) bp.push_back(bp[0]);  // an empty extent: one empty segment
    return bp;
  }
  /// Index of breakpoint `value` (which is one).
  static std::size_t segment(const std::vector<index_t>& bp, index_t value) {
    return to_size(std::lower_bound(bp.begin(), bp.end(), value) - bp.begin());
  }
  static std::size_t segments(const std::vector<index_t>& bp, index_t first, index_t last) {
    return segment(bp, last) - segment(bp, first);
  }
  /// The segment [bp[s], bp[s + 1]) holding `value`.
  static std::size_t find(const std::vector<index_t>& bp, index_t value) {
    return to_size(std::upper_bound(bp.begin(), bp.end(), value) - bp.begin()) - 1;
  }
  /// Fills start_/ranks_ for `slots` slots; `cover(block, add)` calls add(slot) for each slot a block covers.
  template <class Cover>
  void build(std::size_t slots, Cover&& cover) {
    start_.assign(slots + 1, 0);
    for (const Block& b : blocks_) {
      if (!b.empty()) cover(b, [&](std::size_t s) { ++start_[s + 1]; });
    }
    for (std::size_t s = 0; s < slots; ++s) start_[s + 1] += start_[s];
    ranks_.resize(start_[slots]);
    std::vector<std::size_t> next(start_.begin(), start_.end() - 1);
    for (std::size_t q = 0; q < blocks_.size(); ++q) {
      if (!blocks_[q].empty()) cover(blocks_[q], [&](std::size_t s) { ranks_[next[s]++] = static_cast<int>(q); });
    }
  }

  const std::vector<Block>& blocks_;
  std::vector<index_t> row_bp_, col_bp_;
  bool use_table_ = true;
  std::vector<std::size_t> start_;
  std::vector<int> ranks_;
};

// ---------------------------------------------------------------------------------------------
// Entries in transit: (local row i64, local column i32, value T), packed.

template <class T>
constexpr std::size_t kRecordBytes = sizeof(std::int64_t) + sizeof(col_index_t) + sizeof(T);
static_assert(kRecordBytes<float> == mtx_record_bytes(sizeof(float)) &&
              kRecordBytes<double> == mtx_record_bytes(sizeof(double)));

template <class T>
void pack(std::vector<unsigned char>& out, std::int64_t row, col_index_t col, T value) {
  unsigned char record[kRecordBytes<T>];
  std::memcpy(record, &row, sizeof(row));
  std::memcpy(record + sizeof(row), &col, sizeof(col));
  std::memcpy(record + sizeof(row) + sizeof(col), &value, sizeof(value));
  out.insert(out.end(), record, record + kRecordBytes<T>);
}

// ---------------------------------------------------------------------------------------------
// This rank's part of the file.

/// What parsing one byte range found.
struct RangeResult {
  std::int64_t lines = 0;    ///< lines that start in the range
  std::int64_t entries = 0;  ///< entry lines parsed (up to the first failure)
  bool failed = false;
  std::int64_t failure_line = -1;  ///< local 0-based line of the failure; -1: not tied to a line
  std::string problem;             ///< the failure's text (after "PATH:LINE: " when tied to a line)
};

struct ByteRange {
  std::uint64_t begin, end;
};

ByteRange range_of(const mtx::Header& h, std::uint64_t file_size, int rank, int parts) {
  const std::uint64_t data = file_size - std::min(file_size, h.data_offset);
  const auto cut = [&](int r) {
    // data * r / parts without overflow for files up to 2^64 / parts bytes.
    return h.data_offset + data / static_cast<std::uint64_t>(parts) * static_cast<std::uint64_t>(r) +
           data % static_cast<std::uint64_t>(parts) * static_cast<std::uint64_t>(r) / static_cast<std::uint64_t>(parts);
  };
  return {cut(rank), cut(rank + 1)};
}

/// Reserves each destination's bucket for about the records it will get: the range's share of the announced entries
/// (twice for a symmetric file), split by the blocks' areas with room to spare. A reservation is address space until
/// it is filled; grown record by record, each reallocation held the old and the new bucket, and a resident .mtx
/// peaked at up to 1.24x the memory budget its plan had kept to.
template <class T>
void reserve_buckets(std::vector<std::vector<unsigned char>>& buckets, const std::vector<Block>& blocks,
                     const mtx::Header& h, ByteRange range, std::uint64_t file_size) {
  const double data = static_cast<double>(file_size - std::min(file_size, h.data_offset));
  if (!(data > 0)) return;
  // At most one entry per 4 bytes of the range ("1 1 1\n" is the shortest line).
  const double bytes = static_cast<double>(range.end - range.begin);
  const double entries = std::min(static_cast<double>(h.entries) * bytes / data, bytes / 4 + 1) * (h.symmetric ? 2 : 1);
  const double area = std::max(1.0, static_cast<double>(h.rows) * static_cast<double>(h.cols));
  for (std::size_t q = 0; q < buckets.size(); ++q) {
    const Block& b = blocks[q];
    if (b.empty()) continue;
    const double share = static_cast<double>(b.r1 - b.r0) * static_cast<double>(b.c1 - b.c0) / area;
    const double records = buckets.size() == 1 ? entries : std::min(entries, 1.25 * share * entries + 1024);
    buckets[q].reserve(static_cast<std::size_t>(records) * kRecordBytes<T>);
  }
}

template <class T>
RangeResult parse_range(const InputFile& file, const mtx::Header& h, ByteRange range, std::size_t chunk,
                        const Router& router, const std::vector<Block>& blocks,
                        std::vector<std::vector<unsigned char>>& buckets, bool check_entries) {
  RangeResult result;
  const auto send = [&](index_t i, index_t j, T value) {
    router.route(i, j, [&](int q) {
      const Block& b = blocks[to_size(q)];
      pack<T>(buckets[to_size(q)], i - b.r0, static_cast<col_index_t>(j - b.c0), value);
    });
  };
  try {
    mtx::RangeLines lines(file, h.data_offset, range.begin, range.end, chunk);
    std::string_view line;
    for (; lines.next(line); ++result.lines) {
      if (result.failed || !mtx::is_content(line)) continue;  // after a failure, only lines are counted
      index_t i = 0, j = 0;
      T value{};
      std::string problem = mtx::parse_entry(line, h, i, j, value);
      if (problem.empty() && check_entries && !acceptable_entry(value)) problem = describe_bad_entry(i, j, value);
      if (!problem.empty()) {
        result.failed = true;
        result.failure_line = result.lines;
        result.problem = std::move(problem);
        continue;
      }
      ++result.entries;
      send(i, j, value);
      if (h.symmetric && i != j) send(j, i, value);  // only one triangle is stored
    }
  } catch (const Error& e) {  // I/O: not tied to a line
    result.failed = true;
    result.failure_line = -1;
    result.problem = e.what();
  }
  return result;
}

/// Local 0-based line of this range's `index`-th entry line (a second pass; only for an error message).
index_t line_of_entry(const InputFile& file, const mtx::Header& h, ByteRange range, std::size_t chunk,
                      std::int64_t index) {
  mtx::RangeLines lines(file, h.data_offset, range.begin, range.end, chunk);
  std::string_view line;
  for (index_t number = 0; lines.next(line); ++number) {
    if (mtx::is_content(line) && index-- == 0) return number;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// The local CSR from the received entries (rank order = file order; stable sorts keep it, so duplicates are
// summed in file order, as the one-process reader does).

template <class T>
CsrMatrix<T> build_block(index_t rows, index_t cols, const std::vector<unsigned char>& received,
                         detail::MergeOverflow* overflow) {
  const std::size_t count = received.size() / kRecordBytes<T>;
  const auto row_at = [&](std::size_t k) {
    std::int64_t row;
    std::memcpy(&row, received.data() + k * kRecordBytes<T>, sizeof(row));
    return row;
  };
  std::vector<index_t> indptr(to_size(rows) + 1, 0);
  for (std::size_t k = 0; k < count; ++k) ++indptr[to_size(row_at(k)) + 1];
  for (index_t i = 0; i < rows; ++i) indptr[i + 1] += indptr[i];
  std::vector<col_index_t> indices(count);
  std::vector<T> values(count);
  {
    std::vector<index_t> next(indptr.begin(), indptr.end() - 1);
    for (std::size_t k = 0; k < count; ++k) {
      const unsigned char* record = received.data() + k * kRecordBytes<T>;
      const auto at = to_size(next[to_size(row_at(k))]++);
      std::memcpy(&indices[at], record + sizeof(std::int64_t), sizeof(col_index_t));
      std::memcpy(&values[at], record + sizeof(std::int64_t) + sizeof(col_index_t), sizeof(T));
    }
  }
  detail::sort_and_merge_rows(rows, indptr, indices, values, overflow);
  return CsrMatrix<T>(rows, cols, std::move(indptr), std::move(indices), std::move(values));
}

}  // namespace

template <class T>
CsrMatrix<T> read_mtx_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm,
                            std::size_t chunk_bytes, bool check_entries) {
  const int p = comm.size();
  const auto up = to_size(p);
  const mtx::Header h = broadcast_header(path, comm);
  const std::vector<Block> blocks = gather_blocks(path, rows, cols, h, comm);

  // Parse this rank's range into per-destination buckets.
  std::vector<std::vector<unsigned char>> buckets(up);
  RangeResult parsed;
  std::optional<InputFile> file;
  ByteRange range{};
  try {
    file.emplace(path);
    range = range_of(h, file->size(), comm.rank(), p);
    const Router router(blocks, h.rows, h.cols);
    reserve_buckets<T>(buckets, blocks, h, range, file->size());
    parsed = parse_range<T>(*file, h, range, chunk_bytes, router, blocks, buckets, check_entries);
  } catch (const Error& e) {
    parsed = {0, 0, true, -1, e.what()};
  } catch (const std::bad_alloc&) {
    parsed = {0, 0, true, -1, path + ": out of memory while reading this rank's part of the file"};
  }
  // A rank that could not even open the file counts no lines; line numbers after it would be wrong, but only
  // the first failure (this one, or an earlier one) is reported.

  // Every rank learns every rank's counts and failure, and so picks the same first problem.
  std::vector<std::int64_t> stats(4 * up);
  const std::int64_t mine[4] = {parsed.lines, parsed.entries, parsed.failed ? 1 : 0, parsed.failure_line};
  if (p == 1) {
    std::copy(mine, mine + 4, stats.begin());
  } else {
    comm.allgather(mine, stats.data(), std::vector<std::size_t>(up, 4), dist::Scalar::i64);
  }
  int failing = -1;
  std::int64_t lines_before_failing = 0, total_lines = 0, total_entries = 0;
  for (std::size_t q = 0; q < up; ++q) {
    if (failing < 0 && stats[4 * q + 2] != 0) {
      failing = static_cast<int>(q);
      lines_before_failing = total_lines;
    }
    total_lines += stats[4 * q];
    total_entries += stats[4 * q + 1];
  }
  // Entry lines in file order up to the first failure; a malformed line counts as one (the one-process reader
  // counts a line before parsing it, so an extra line is "more entries" even when it is also malformed).
  std::vector<std::int64_t> counts(up, 0);
  std::int64_t counted = 0;
  for (std::size_t q = 0; q < up && (failing < 0 || q <= to_size(failing)); ++q) {
    counts[q] = stats[4 * q + 1] + (static_cast<int>(q) == failing && stats[4 * q + 3] >= 0 ? 1 : 0);
    counted += counts[q];
  }
  const std::string size_line = std::to_string(h.size_line);
  if (counted > h.entries) {
    // The rank holding entry number h.entries (0-based) finds its line and reports it.
    std::int64_t before = 0, lines_before = 0;
    int holder = 0;
    while (before + counts[to_size(holder)] <= h.entries) {
      before += counts[to_size(holder)];
      lines_before += stats[4 * to_size(holder)];
      ++holder;
    }
    std::string message;
    if (comm.rank() == holder) {
      const std::string what = "more entries than the " + std::to_string(h.entries) + " announced on line " + size_line;
      try {
        const index_t local = line_of_entry(*file, h, range, chunk_bytes, h.entries - before);
        message = path + ":" + std::to_string(h.size_line + lines_before + local + 1) + ": " + what;
      } catch (const Error&) {
        message = path + ": " + what;
      }
    }
    detail::raise_everywhere(comm, holder, message, ErrorKind::data);
  }
  if (failing >= 0) {  // every rank knows who failed: one CollectiveError with its message, printed once
    std::string message;
    if (comm.rank() == failing) {
      message = parsed.failure_line < 0
                    ? parsed.problem
                    : path + ":" + std::to_string(h.size_line + lines_before_failing + parsed.failure_line + 1) + ": " +
                          parsed.problem;
    }
    detail::raise_everywhere(comm, failing, message, ErrorKind::data);
  }
  if (total_entries < h.entries) {  // every rank knows this message: no broadcast needed
    throw CollectiveError(path + ":" + std::to_string(h.size_line + total_lines + 1) +
                              ": truncated: the file ends after " + std::to_string(total_entries) + " of the " +
                              std::to_string(h.entries) + " entries announced on line " + size_line,
                          ErrorKind::data);
  }
  file.reset();

  // The exchange: counts first, then the packed entries.
  std::vector<std::size_t> ones(up, 1);
  std::vector<std::int64_t> send_bytes(up), recv_bytes(up);
  for (std::size_t q = 0; q < up; ++q) send_bytes[q] = static_cast<std::int64_t>(buckets[q].size());
  if (p == 1) {
    recv_bytes = send_bytes;
  } else {
    comm.alltoallv(send_bytes.data(), ones, recv_bytes.data(), ones, dist::Scalar::i64);
  }
  std::vector<std::size_t> send_counts(up), recv_counts(up);
  std::vector<unsigned char> send, received;
  detail::run_agreed(comm, path, [&] {
    std::size_t send_total = 0, recv_total = 0;
    for (std::size_t q = 0; q < up; ++q) {
      send_counts[q] = to_size(send_bytes[q]);
      recv_counts[q] = to_size(recv_bytes[q]);
      send_total += send_counts[q];
      recv_total += recv_counts[q];
    }
    if (p == 1) {
      received = std::move(buckets[0]);
      return;
    }
    send.reserve(send_total);
    for (auto& bucket : buckets) {
      send.insert(send.end(), bucket.begin(), bucket.end());
      std::vector<unsigned char>().swap(bucket);
    }
    received.resize(recv_total);
  });
  if (p > 1) comm.alltoallv(send.data(), send_counts, received.data(), recv_counts, dist::Scalar::u8);
  std::vector<unsigned char>().swap(send);
  // Duplicates whose sum overflows are refused where they are (with unchecked entries the caller checks the
  // ones it reads, as it does a bad line).
  return detail::run_agreed(comm, path, [&] {
    detail::MergeOverflow overflow;
    CsrMatrix<T> block = build_block<T>(rows.size(), cols.size(), received, &overflow);
    if (check_entries && overflow.count > 0)
      throw DataError(path + ": " +
                      detail::describe_overflowed_sum<T>(rows.first + overflow.row, cols.first + overflow.col, 1));
    return block;
  });
}

template CsrMatrix<float> read_mtx_block<float>(const std::string&, dist::Range, dist::Range, dist::Communicator&,
                                                std::size_t, bool);
template CsrMatrix<double> read_mtx_block<double>(const std::string&, dist::Range, dist::Range, dist::Communicator&,
                                                  std::size_t, bool);

}  // namespace dnmf::io
