// Laws chosen from a table of few laws by an index per particle (law i = table_{index_i}): the particles' laws
// spread out, their draws and their log-likelihoods, without P copies of the table's laws.
#pragma once

#include <cstdint>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

// A table of K laws and a column of P indices stand for the P laws \f$ \mu_i = \tau_{\mathrm{index}_i} \f$: what
// particles hold whose laws depend on a value with few states (a Markov step or an emission of a realized state
// has one law per state). Every function runs where the index lives; the table (and add_indexed's x) may live there
// or on the host, where a small table is cheapest: its few laws are worked on by the host, and a device function
// takes them along (a draw's tables or x's values sent with the launch where they fit in 2 KB, copied over
// otherwise). A device table with a host index, or columns of P values apart from the index, are a
// tally::shape_error. Each needs 0 <= index_i < K in every particle: tally::domain_error naming the first
// particle outside ("particle i's state j is not one of the K states 0 .. K - 1 of the table"), on the host before
// anything is written and on the device as a deferred check (gpu::DeferChecks), raised where the host next waits.
// Device: one thread a particle, nothing read back.

/// The P laws themselves: out_i = table_{index_i} (weights, lo and log-scale copied). The device writes them without
/// reading lengths back where the table's laws are of about one length (K times the longest at most twice their
/// total: a table of Markov rows), each law then as long as the longest, zeros after its own weights; otherwise the
/// index is checked and the lengths gathered, scanned and their total read back, as gpu::gather does.
Laws indexed(const Laws& table, const Column<std::int64_t>& index);

/// One draw per particle from its law, the same as sample(indexed(table, index), seed, counter, first_stream) (the
/// rule of gpu::sample_batched, u_i = philox_uniform(seed, first_stream + i, counter)), without the P copies: each
/// law's draw table (the rule's sums, scan_math.hpp's fill_draw_table) is made once, then each draw is a binary
/// search of its law's tiles and a scan of one tile (as gpu::sample_shared draws from one law). Device: one launch
/// for the P draws, one thread a particle, after a launch for the K tables (one thread a law) where the table is on
/// the device; a host table's draw tables are made on the host.
Column<std::int64_t> sample_indexed(const Laws& table, const Column<std::int64_t>& index, std::uint64_t seed,
                                    std::uint64_t counter, std::uint64_t first_stream = 0);

/// \f$ \mathrm{acc}_i \mathrel{+}= x_{\mathrm{index}_i} \f$: a log-likelihood computed once per law of the table
/// added to each particle that holds that law (x: K values, acc and index: P).
void add_indexed(Column<double>& acc, const Column<double>& x, const Column<std::int64_t>& index);

/// The check above alone, its error naming `who` (a caller that makes a table for an index it did not make).
void check_indices(const Column<std::int64_t>& index, std::size_t laws, const char* who);

}  // namespace tally::gpu
