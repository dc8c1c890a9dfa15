// Reachability in a DAG: boolean (AND/OR) matrix products on bit-packed rows and the transitive closure by squaring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tally/gpu/bit_matrix.hpp"

namespace tally::gpu {

/// The dispatch thresholds, from bench/closure_gpu.cu's crossover table (H100, host to host, random DAGs of
/// out-degree 8): closures of at least cuda_min_closure_nodes nodes, and products of at least
/// cuda_min_product_nodes, run on the device when one is present (TALLY_DEVICE=gpu or cpu forces either way);
/// smaller ones on the CPU. At N = 512 the CPU took 0.17 ms and the device 0.24 ms; at N = 1024, 0.54 against
/// 0.28 (products: 0.065 against 0.093 ms, then 0.24 against 0.12 ms).
///@{
inline constexpr std::size_t cuda_min_closure_nodes = 1024;
inline constexpr std::size_t cuda_min_product_nodes = 1024;
///@}
/// ClosureOrder::automatic relabels in topological order from this many nodes on: the host's order and the two
/// permutations cost more than the triangle saves below it (N = 8192: 5.2 ms against 4.3 as given; N = 16384:
/// 16.1 against 24.5 ms).
inline constexpr std::size_t cuda_topological_min_nodes = 12288;

/// The boolean product \f$C_{ij} = \bigvee_k A_{ik} \wedge B_{kj}\f$ of two n x n matrices.
/// Throws tally::shape_error when the sizes differ. The dispatch point: CUDA when built, a device is present and
/// n >= cuda_min_product_nodes; else cpu::boolean_product.
BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b);

/// The transitive closure of a DAG given by its adjacency (A_ij = 1: an edge i -> j):
/// \f$R_{ij} = 1\f$ iff a path of length >= 1 goes from i to j (so R_ii = 0 for every node of a DAG).
/// A graph with a cycle (a self-loop included) is a tally::shape_error that names a node on a cycle.
/// The dispatch point: cuda::transitive_closure (repeated squaring) when built, a device is present and
/// n >= cuda_min_closure_nodes; else cpu::transitive_closure.
BitMatrix transitive_closure(const BitMatrix& adjacency);

/// A topological order of the DAG: order[p] is the node at position p, and every edge i -> j has i before j.
/// Sparse graphs (fewer edges than words) by Kahn's algorithm on successor lists read from the rows in parallel
/// (O(n^2 / 64) word operations split over the hardware's threads, then O(n + edges)); dense ones by an iterative
/// depth-first search (reverse post-order, O(n^2 / 64 + edges)). Throws tally::shape_error when the graph has a
/// cycle, listing the nodes of one.
std::vector<std::size_t> topological_order(const BitMatrix& adjacency);

namespace cpu {
/// The CPU reference of the product, by rows: row i of C is the OR of the rows k of B for the set bits k of row i of
/// A, one word (64 columns) at a time: O(n^2 / 64 + nnz(A) n / 64) word operations. Same contract as above.
BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b);

/// The closure in reverse topological order: row u of R is the OR over u's successors v of (e_v | row v of R),
/// each row finished before any predecessor reads it: O(n^2 / 64 + edges * n / 64). Same contract as above.
BitMatrix transitive_closure(const BitMatrix& adjacency);

/// Warshall's algorithm on packed rows, an independent check of the others: for k = 0..n-1, every row i with
/// R_ik set gets R_i |= R_k (O(n^3 / 64) at most). A cycle shows as some R_ii set after it: tally::shape_error.
BitMatrix warshall_closure(const BitMatrix& adjacency);

/// The closure by repeated squaring on the CPU, the algorithm of cuda::transitive_closure with the order as given:
/// R <- R | R * R (cpu::boolean_product) until nothing changes or ceil(log2 n) squarings are done (after s of them
/// every path of length <= 2^s is covered, and no simple path or cycle is longer than n). A cycle shows as some
/// R_ii set at the end: tally::shape_error. When `squarings` is not null it receives the number of products.
BitMatrix closure_by_squaring(const BitMatrix& adjacency, int* squarings = nullptr);
}  // namespace cpu

namespace cuda {
/// Which CUDA kernel computes a boolean product.
enum class BoolKernel {
  automatic,  ///< `tensor_b1`
  /// The contraction axis packed 64 entries per word: A's rows and the rows of B's transpose. A block of 256
  /// threads computes a 64 x 128 tile of C: word strips of 64 rows of A and 128 rows of B^T stream through shared
  /// memory (cp.async, double-buffered, 8 words of k per stage); each thread ORs (a & b) for 8 rows x 4 columns in
  /// registers (a zero word of A, the same for a whole warp, is skipped), and an output word (64 cells) is packed by
  /// warp ballots and written at once. Early exit: a cell is done once its OR is non-zero (or it was already set,
  /// in a closure); a warp whose cells are all done skips the arithmetic, and the block leaves the k loop as soon as
  /// all its cells are done (a barrier vote, so that no thread waits at a barrier that others skipped).
  packed,
  /// Hopper's 1-bit tensor cores (mma.sync m16n8k256 .and.popc, sm_80 and later): C_ij is true when the count
  /// \f$\sum_k A_{ik} B_{kj}\f$ (AND + popcount over 256 values of k per instruction) is non-zero. A block of 256
  /// threads computes a 128 x 128 tile of C, each warp 32 rows x 64 columns (2 x 8 MMA tiles); A's rows and B^T's
  /// rows stream through shared memory 1024 values of k at a time (cp.async, three buffers, swizzled for
  /// ldmatrix). Early exit by tiles: a block whose cells were all set already skips its products, and one whose
  /// counts are all non-zero leaves the k loop (a barrier vote per stage). No cell leaves early by itself: the
  /// tensor cores do the work of a whole tile at 10x the rate of packed's LOP3 arithmetic.
  tensor_b1,
  /// The seed-001 baseline: one byte per entry and one thread per cell, C_ij = OR_k (A_ik & B_kj) with the loop
  /// left at the first k that makes it true.
  byte_per_entry,
};

/// The order in which cuda::transitive_closure squares the matrix.
enum class ClosureOrder {
  /// `topological` from cuda_topological_min_nodes nodes on, else `as_given`.
  automatic,
  /// Nodes relabelled in a topological order first (topological_order on the host, which also reports a cycle;
  /// the permutation itself on the device): R is then strictly upper triangular, so cell (i, j) needs only k in
  /// (i, j), tiles below the diagonal are skipped, and tiles far above it are mostly all true and leave early.
  topological,
  /// The labels as given, the plain algorithm: every product runs over all k. A cycle shows as some R_ii set
  /// once the squarings are done (the graph is squared to the end first).
  as_given,
};

/// The CUDA implementations, host memory in and out (copies included); same contracts as above. Throw
/// tally::cuda_error when tally was built without CUDA, there is no device, or a CUDA call fails, and
/// tally::overflow_error, before allocating anything, when the matrices do not fit in the device's free memory
/// (the message says how many bytes were needed and how many are free).
BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b, BoolKernel kernel = BoolKernel::automatic);

/// The closure by repeated squaring on the device, R <- R | R * R, as cpu::closure_by_squaring: the matrix, its
/// transpose and the next one stay on the device, and each squaring brings back one flag, set by the product
/// kernel when some bit of R changed; squaring stops when none did, or after ceil(log2 n) squarings. When
/// `squarings` is not null it receives the number of products (the same count as cpu::closure_by_squaring's).
BitMatrix transitive_closure(const BitMatrix& adjacency, BoolKernel kernel = BoolKernel::automatic,
                             ClosureOrder order = ClosureOrder::automatic, int* squarings = nullptr);

/// The closure of a DAG level by level instead of by squaring: levels from the sinks (level 0) up, a node's level
/// one more than its successors' largest; then, one launch per level, the row of each node of the level is
/// \f$R_v = \bigvee_{c \in \mathrm{succ}(v)} (R_c \vee e_c)\f$ (its successors' rows are finished). About
/// edges x n / 64 word operations, against n^3 / 64 per squaring. The topological order, the successor lists and
/// the levels are found on the host (O(n^2 / 64 + edges)). Same contract as transitive_closure.
BitMatrix closure_by_levels(const BitMatrix& adjacency);

/// On device memory, a product kernel alone: c = a * b for n x n matrices, `a` A's rows and `bt` the rows of B's
/// transpose (n * words_per_row(n) words each, bits beyond column n - 1 zero), `c` not overlapping them; `stream`
/// is a cudaStream_t (nullptr: the default stream). Asynchronous; nothing is checked but n.
/// `kernel`: packed or tensor_b1 (automatic: tensor_b1); byte_per_entry is a tally::domain_error here.
void boolean_product_device(const std::uint64_t* a, const std::uint64_t* bt, std::uint64_t* c, std::size_t n,
                            void* stream = nullptr, BoolKernel kernel = BoolKernel::automatic);
/// The closure on device memory, with CUB's two-phase temporary storage: R <- R | R * R in place on the n x n packed
/// matrix `r` (n * words_per_row(n) words, bits beyond column n - 1 zero), the labels as given. With
/// temp == nullptr, only sets temp_bytes (two matrices and a flag) and returns. Runs on `stream` (a cudaStream_t)
/// and synchronizes it once per squaring to read the changed flag, and once at the end to check the diagonal: a
/// cycle is tally::shape_error naming a node on it, as above. `kernel`: packed or tensor_b1 (automatic:
/// tensor_b1). `squarings`, when not null, receives the number of products.
void transitive_closure_device(void* temp, std::size_t& temp_bytes, std::uint64_t* r, std::size_t n,
                               int* squarings = nullptr, BoolKernel kernel = BoolKernel::automatic,
                               void* stream = nullptr);
/// On device memory: out = the transpose of `in` (n x n packed as above; they must not overlap). Asynchronous.
void transpose_device(const std::uint64_t* in, std::uint64_t* out, std::size_t n, void* stream = nullptr);
}  // namespace cuda

}  // namespace tally::gpu
