// Boolean products and transitive closures on the device: the packed tile kernel, squaring with a changed flag per
// product, the topological relabelling, and the seed-001 byte-per-entry baseline.
#include <algorithm>
#include <future>
#include <vector>

#include "closure_check.hpp"
#include "closure_kernels.cuh"
#include "closure_tensor.cuh"
#include "cuda_check.cuh"
#include "zeroed_words.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu::cuda {
namespace {

using detail::DeviceBuffer;
using Words = DeviceBuffer<std::uint64_t>;
using Bytes = DeviceBuffer<unsigned char>;

constexpr int launch_threads = 256;

double packed_bytes(std::size_t n) { return 8.0 * double(n) * double(BitMatrix::words_per_row(n)); }

unsigned grid_for(std::uint64_t items, std::uint64_t per_block, std::uint64_t most = 1u << 30) {
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(most, (items + per_block - 1) / per_block)));
}

void upload(const BitMatrix& m, Words& d) {
  if (!m.words().empty())
    TALLY_CUDA_CHECK(cudaMemcpy(d.data(), m.words().data(), m.words().size() * 8, cudaMemcpyHostToDevice));
}

/// The n x n packed matrix at `d`, copied into `words` (n * words_per_row(n) of them).
BitMatrix download_into(const std::uint64_t* d, std::size_t n, std::vector<std::uint64_t> words) {
  if (!words.empty()) TALLY_CUDA_CHECK(cudaMemcpy(words.data(), d, words.size() * 8, cudaMemcpyDeviceToHost));
  return BitMatrix(n, std::move(words));
}
BitMatrix download(Words& d, std::size_t n) {
  return download_into(d.data(), n, detail::zeroed_words(n * BitMatrix::words_per_row(n)));
}

void launch_transpose(const std::uint64_t* in, std::uint64_t* out, std::size_t n, cudaStream_t stream) {
  const std::uint64_t words = BitMatrix::words_per_row(n);
  if (n == 0) return;
  const std::uint64_t column_tiles = (words + kernels::transpose_tile_words - 1) / kernels::transpose_tile_words;
  const std::uint64_t row_tiles = (words + kernels::transpose_tile_row_blocks - 1) / kernels::transpose_tile_row_blocks;
  if (row_tiles <= 65535) {
    const dim3 grid(static_cast<unsigned>(column_tiles), static_cast<unsigned>(row_tiles));
    kernels::transpose_tiles<<<grid, kernels::transpose_tile_threads, 0, stream>>>(in, out, n, words);
  } else {  // more row tiles than a grid has rows (n near 2^24): a warp per 64 x 64 block
    kernels::transpose<<<grid_for(words * words * 32, launch_threads, 1u << 20), launch_threads, 0, stream>>>(
        in, out, n, words);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

/// One product on `stream` by the packed kernel or by the tensor-core kernel (`automatic`: the tensor cores).
void launch_product(const kernels::ProductArgs& args, BoolKernel kernel, cudaStream_t stream, const char* who) {
  if (args.n == 0) return;
  const bool tensor = kernel != BoolKernel::packed;
  const std::uint64_t rows = tensor ? kernels::tensor_tile : kernels::tile_rows;
  const std::uint64_t cols = tensor ? kernels::tensor_tile : kernels::tile_cols;
  const std::uint64_t row_tiles = (args.n + rows - 1) / rows, col_tiles = (args.n + cols - 1) / cols;
  if (row_tiles > 65535 || col_tiles > 65535)
    tally::detail::fail<overflow_error>(who, ": n = ", args.n, " is too large for one launch");
  if (!tensor) {
    const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(col_tiles));
    kernels::packed_product<<<grid, kernels::product_threads, 0, stream>>>(args);
  } else {
    static const bool opted_in = [] {  // above the default 48 KiB of dynamic shared memory, once per process
      TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernels::tensor_product<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            kernels::tensor_shared_bytes));
      TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernels::tensor_product<false>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, kernels::tensor_shared_bytes));
      return true;
    }();
    (void)opted_in;
    const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles));
    if (args.words % 2 == 0)
      kernels::tensor_product<true><<<grid, kernels::tensor_threads, kernels::tensor_shared_bytes, stream>>>(args);
    else
      kernels::tensor_product<false><<<grid, kernels::tensor_threads, kernels::tensor_shared_bytes, stream>>>(args);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

/// The relabelling maps of the topological order: `order` (new label -> old) and its inverse, as device arrays.
struct Relabel {
  DeviceBuffer<std::uint32_t> to_old, to_new;
};

Relabel relabelling(const std::vector<std::size_t>& order) {
  const std::size_t n = order.size();
  std::vector<std::uint32_t> to_old(n), to_new(n);
  for (std::size_t p = 0; p < n; ++p) {
    to_old[p] = static_cast<std::uint32_t>(order[p]);
    to_new[order[p]] = static_cast<std::uint32_t>(p);
  }
  Relabel r{DeviceBuffer<std::uint32_t>(n), DeviceBuffer<std::uint32_t>(n)};
  if (n > 0) {
    TALLY_CUDA_CHECK(cudaMemcpy(r.to_old.data(), to_old.data(), n * 4, cudaMemcpyHostToDevice));
    TALLY_CUDA_CHECK(cudaMemcpy(r.to_new.data(), to_new.data(), n * 4, cudaMemcpyHostToDevice));
  }
  return r;
}

/// Host work that overlaps the device's when the matrix is large (2^18 words and more: the thread costs less than
/// the work): the topological order, and the result's fresh pages (page faults: see detail::zeroed_words).
constexpr std::size_t overlap_min_words = std::size_t{1} << 18;

/// `count` zeroed words, made on another thread for large counts (get() them once the device's result is ready).
std::future<std::vector<std::uint64_t>> result_words(std::size_t count) {
  return std::async(count >= overlap_min_words ? std::launch::async : std::launch::deferred,
                    [count] { return detail::zeroed_words(count); });
}

void launch_permute(const std::uint64_t* in, std::uint64_t* out, const std::uint32_t* map, std::size_t n) {
  if (n == 0) return;
  const std::uint64_t words = BitMatrix::words_per_row(n);
  if (words <= kernels::staged_permute_max_words) {
    const int bytes = static_cast<int>(kernels::staged_permute_rows * words * 8);
    static const bool opted_in = [] {  // above the default 48 KiB of dynamic shared memory, once per process
      TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernels::permute_staged, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            kernels::staged_permute_rows * kernels::staged_permute_max_words * 8));
      return true;
    }();
    (void)opted_in;
    kernels::permute_staged<<<grid_for(n, kernels::staged_permute_rows), kernels::staged_permute_rows * 32, bytes>>>(
        in, out, map, n, words);
  } else {
    kernels::permute<<<grid_for(std::uint64_t(n) * 32, launch_threads, 1u << 16), launch_threads>>>(in, out, map, n,
                                                                                                   words);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_byte_product(const unsigned char* a, const unsigned char* b, const unsigned char* old, unsigned char* c,
                         std::size_t n, bool triangular, unsigned* changed) {
  if (n == 0) return;
  const dim3 grid(grid_for(n, launch_threads), static_cast<unsigned>(std::min<std::size_t>(n, 65535)));
  kernels::byte_product<<<grid, launch_threads>>>(a, b, old, c, n, triangular, changed);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_unpack(const std::uint64_t* in, unsigned char* out, std::size_t n) {
  if (n == 0) return;
  kernels::unpack<<<grid_for(std::uint64_t(n) * n, launch_threads, 1u << 16), launch_threads>>>(
      in, out, n, BitMatrix::words_per_row(n));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_pack(const unsigned char* in, std::uint64_t* out, std::size_t n) {
  if (n == 0) return;
  const std::uint64_t words = BitMatrix::words_per_row(n);
  kernels::pack<<<grid_for(n * words, launch_threads, 1u << 16), launch_threads>>>(in, out, n, words);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

bool read_flag(DeviceBuffer<unsigned>& flag) {
  unsigned host = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&host, flag.data(), sizeof host, cudaMemcpyDeviceToHost));
  return host != 0;
}

/// Squares the packed matrix in `r` (with `s` and `t` as scratch, `flag` one unsigned) on `stream` until nothing
/// changes or `bound` squarings are done; returns r or s, whichever holds the result, and counts the products in
/// *count. The stream is synchronized once per squaring, to read the flag.
std::uint64_t* square_packed(std::uint64_t* r, std::uint64_t* s, std::uint64_t* t, unsigned* flag, std::size_t n,
                             bool triangular, int bound, int* count, BoolKernel kernel, cudaStream_t stream,
                             const char* who) {
  std::uint64_t* cur = r;
  std::uint64_t* next = s;
  for (*count = 0; *count < bound;) {
    launch_transpose(cur, t, n, stream);
    TALLY_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned), stream));
    launch_product({cur, t, cur, next, n, BitMatrix::words_per_row(n), triangular, flag}, kernel, stream, who);
    ++*count;
    std::swap(cur, next);
    unsigned changed = 0;
    TALLY_CUDA_CHECK(cudaMemcpyAsync(&changed, flag, sizeof changed, cudaMemcpyDeviceToHost, stream));
    TALLY_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (changed == 0) break;
  }
  return cur;
}

/// The smallest i with R_ii set, or n: `first` (one unsigned, set to n before) gets atomicMin of the set ones.
__global__ void first_on_diagonal(const std::uint64_t* r, std::uint64_t n, std::uint64_t words, unsigned* first) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    if ((r[i * words + i / 64] >> (i % 64)) & 1u) atomicMin(first, static_cast<unsigned>(i));
}

/// Throws the closure's shape_error when some R_ii is set (n <= 2^24, so labels fit an unsigned).
void check_diagonal_device(const std::uint64_t* r, std::size_t n, unsigned* scratch, cudaStream_t stream,
                           const char* who) {
  if (n == 0) return;
  unsigned first = static_cast<unsigned>(n);
  TALLY_CUDA_CHECK(cudaMemcpyAsync(scratch, &first, sizeof first, cudaMemcpyHostToDevice, stream));
  first_on_diagonal<<<grid_for(n, launch_threads, 1024), launch_threads, 0, stream>>>(
      r, n, BitMatrix::words_per_row(n), scratch);
  TALLY_CUDA_CHECK(cudaGetLastError());
  TALLY_CUDA_CHECK(cudaMemcpyAsync(&first, scratch, sizeof first, cudaMemcpyDeviceToHost, stream));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first < n)
    tally::detail::fail<shape_error>(who, ": the graph has a cycle through node ", first,
                                     " (a path leads from it back to it); a DAG is required");
}

/// The same on byte matrices: `r` holds the packed matrix in and out.
void square_bytes(Words& r, std::size_t n, bool triangular, int bound, int* count) {
  Bytes x(n * n), y(n * n);
  DeviceBuffer<unsigned> flag(1);
  launch_unpack(r.data(), x.data(), n);
  unsigned char* cur = x.data();
  unsigned char* next = y.data();
  for (*count = 0; *count < bound;) {
    TALLY_CUDA_CHECK(cudaMemset(flag.data(), 0, sizeof(unsigned)));
    launch_byte_product(cur, cur, cur, next, n, triangular, flag.data());
    ++*count;
    std::swap(cur, next);
    if (!read_flag(flag)) break;
  }
  launch_pack(cur, r.data(), n);
}

}  // namespace

void boolean_product_device(const std::uint64_t* a, const std::uint64_t* bt, std::uint64_t* c, std::size_t n,
                            void* stream, BoolKernel kernel) {
  const char* who = "tally::gpu::cuda::boolean_product_device";
  if (n > max_bit_matrix_size) tally::detail::fail<overflow_error>(who, ": n = ", n, " is above 2^24");
  if (kernel == BoolKernel::byte_per_entry)
    tally::detail::fail<domain_error>(who, ": the byte-per-entry kernel needs byte matrices, not packed ones");
  launch_product({a, bt, nullptr, c, n, BitMatrix::words_per_row(n), false, nullptr}, kernel,
                 static_cast<cudaStream_t>(stream), who);
}

void transitive_closure_device(void* temp, std::size_t& temp_bytes, std::uint64_t* r, std::size_t n,
                               int* squarings, BoolKernel kernel, void* stream) {
  const char* who = "tally::gpu::cuda::transitive_closure_device";
  if (n > max_bit_matrix_size) tally::detail::fail<overflow_error>(who, ": n = ", n, " is above 2^24");
  if (kernel == BoolKernel::byte_per_entry)
    tally::detail::fail<domain_error>(who, ": the byte-per-entry kernel needs byte matrices, not packed ones");
  // temp: the next matrix and the transpose (256-byte aligned, as cudaMalloc's), then one flag
  const std::size_t matrix = (n * BitMatrix::words_per_row(n) * 8 + 255) / 256 * 256;
  if (temp == nullptr) {
    temp_bytes = 2 * matrix + 256;
    return;
  }
  if (temp_bytes < 2 * matrix + 256)
    tally::detail::fail<shape_error>(who, ": ", temp_bytes, " bytes of temporary storage, ", 2 * matrix + 256,
                                     " needed (call with temp == nullptr first)");
  if (squarings) *squarings = 0;
  if (n == 0) return;
  auto* bytes = static_cast<unsigned char*>(temp);
  auto* s = reinterpret_cast<std::uint64_t*>(bytes);
  auto* t = reinterpret_cast<std::uint64_t*>(bytes + matrix);
  auto* flag = reinterpret_cast<unsigned*>(bytes + 2 * matrix);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  int count = 0;
  const std::uint64_t* out =
      square_packed(r, s, t, flag, n, false, detail::squaring_bound(n), &count, kernel, cuda_stream, who);
  if (out != r)
    TALLY_CUDA_CHECK(cudaMemcpyAsync(r, out, n * BitMatrix::words_per_row(n) * 8, cudaMemcpyDeviceToDevice,
                                     cuda_stream));
  if (squarings) *squarings = count;
  check_diagonal_device(r, n, flag, cuda_stream, who);
}

void transpose_device(const std::uint64_t* in, std::uint64_t* out, std::size_t n, void* stream) {
  if (n > max_bit_matrix_size)
    tally::detail::fail<overflow_error>("tally::gpu::cuda::transpose_device: n = ", n, " is above 2^24");
  launch_transpose(in, out, n, static_cast<cudaStream_t>(stream));
}

BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b, BoolKernel kernel) {
  const char* who = "tally::gpu::cuda::boolean_product";
  detail::check_same_size(a, b, who);
  detail::require_device(who);
  const std::size_t n = a.size(), words = a.words().size();
  if (kernel == BoolKernel::byte_per_entry) {
    detail::require_device_memory(3.0 * packed_bytes(n) + 3.0 * double(n) * double(n), who, "the matrices");
    Words da(words), db(words), dc(words);
    upload(a, da);
    upload(b, db);
    Bytes ba(n * n), bb(n * n), bc(n * n);
    launch_unpack(da.data(), ba.data(), n);
    launch_unpack(db.data(), bb.data(), n);
    launch_byte_product(ba.data(), bb.data(), nullptr, bc.data(), n, false, nullptr);
    launch_pack(bc.data(), dc.data(), n);
    return download(dc, n);
  }
  detail::require_device_memory(4.0 * packed_bytes(n), who, "the matrices");
  Words da(words), db(words), dbt(words), dc(words);
  upload(a, da);
  upload(b, db);
  launch_transpose(db.data(), dbt.data(), n, nullptr);
  launch_product({da.data(), dbt.data(), nullptr, dc.data(), n, BitMatrix::words_per_row(n), false, nullptr}, kernel,
                 nullptr, who);
  return download(dc, n);
}

BitMatrix transitive_closure(const BitMatrix& adjacency, BoolKernel kernel, ClosureOrder order, int* squarings) {
  const char* who = "tally::gpu::cuda::transitive_closure";
  detail::require_device(who);
  const std::size_t n = adjacency.size(), words = adjacency.words().size();
  const bool bytes = kernel == BoolKernel::byte_per_entry;
  const bool topological = order == ClosureOrder::topological ||
                           (order == ClosureOrder::automatic && n >= cuda_topological_min_nodes);
  const double need = (bytes ? 2.0 * packed_bytes(n) + 2.0 * double(n) * double(n) : 3.0 * packed_bytes(n)) + 8.0 * n;
  detail::require_device_memory(need, who, "the matrices");
  const int bound = detail::squaring_bound(n);
  int count = 0;
  BitMatrix result;
  if (bytes) {
    Relabel relabel{DeviceBuffer<std::uint32_t>(0), DeviceBuffer<std::uint32_t>(0)};
    if (topological) relabel = relabelling(detail::topological_order(adjacency, who));
    Words r(words), s(words);
    upload(adjacency, topological ? s : r);
    if (topological) launch_permute(s.data(), r.data(), relabel.to_old.data(), n);
    square_bytes(r, n, topological, bound, &count);
    if (topological) launch_permute(r.data(), s.data(), relabel.to_new.data(), n);
    result = download(topological ? s : r, n);
  } else if (!topological) {  // the device form on a copy: it also reports a cycle
    auto out = result_words(words);
    Words r(words);
    upload(adjacency, r);
    std::size_t temp_bytes = 0;
    transitive_closure_device(nullptr, temp_bytes, r.data(), n, &count, kernel);
    DeviceBuffer<unsigned char> temp(temp_bytes);
    transitive_closure_device(temp.data(), temp_bytes, r.data(), n, &count, kernel);
    result = download_into(r.data(), n, out.get());
  } else {
    // the order on another thread while the matrix goes up, and the result's pages while the device squares
    auto order = std::async(words >= overlap_min_words ? std::launch::async : std::launch::deferred,
                            [&adjacency, who] { return detail::topological_order(adjacency, who); });
    auto out = result_words(words);
    Words r(words), s(words), t(words);
    DeviceBuffer<unsigned> flag(1);
    upload(adjacency, s);
    Relabel relabel = relabelling(order.get());  // a cycle throws here
    launch_permute(s.data(), r.data(), relabel.to_old.data(), n);
    std::uint64_t* last =
        square_packed(r.data(), s.data(), t.data(), flag.data(), n, true, bound, &count, kernel, nullptr, who);
    std::uint64_t* back = last == r.data() ? s.data() : r.data();
    launch_permute(last, back, relabel.to_new.data(), n);
    result = download_into(back, n, out.get());
  }
  if (squarings) *squarings = count;
  if (bytes && !topological) detail::check_diagonal(result, who);
  return result;
}

}  // namespace tally::gpu::cuda
