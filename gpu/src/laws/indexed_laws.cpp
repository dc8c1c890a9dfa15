// Laws chosen from a table by an index per particle: the CPU reference (loops on one core) and the dispatch to CUDA.
#include "tally/gpu/indexed_laws.hpp"


#include "population_cuda.hpp"
#include "tally/gpu/population_ops.hpp"
#include "population_reference.hpp"
#include "scan_math.hpp"
#include "tally/gpu/philox.hpp"

namespace tally::gpu {

namespace {

using detail::on_device;

/// shape_error for a device table with a host index (a host table goes with either).
void same_place(const Laws& table, const Column<std::int64_t>& index, const char* who) {
  if (on_device(table.where()) && !on_device(index.where()))
    tally::detail::fail<shape_error>(who, ": a table in device memory with an index in host memory");
}

/// index_i as a position in the table of `k` laws, else domain_error naming particle i.
std::size_t position(const Column<std::int64_t>& index, std::size_t i, std::size_t k, const char* who) {
  const std::int64_t j = index.host()[i];
  if (j < 0 || static_cast<std::uint64_t>(j) >= k) detail::fail_state(who, i, j, k);
  return static_cast<std::size_t>(j);
}

}  // namespace

Laws indexed(const Laws& table, const Column<std::int64_t>& index) {
  constexpr const char* who = "tally::gpu::indexed";
  same_place(table, index, who);
  if (on_device(index.where())) return population_cuda::indexed(table, index);
  // the host's form is gather's, the index checked first as the table's positions
  std::vector<std::size_t> positions(index.size());
  for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = position(index, i, table.size(), who);
  return gather(table, Column<std::size_t>::host_values(std::move(positions)));
}

Column<std::int64_t> sample_indexed(const Laws& table, const Column<std::int64_t>& index, std::uint64_t seed,
                                    std::uint64_t counter, std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_indexed";
  same_place(table, index, who);
  if (on_device(index.where())) return population_cuda::sample_indexed(table, index, seed, counter, first_stream);
  const PmfBatch& t = table.host();
  std::vector<detail::DrawTable> draws;  // each law's table, made when a particle first needs it
  std::vector<bool> made(t.size(), false);
  draws.resize(t.size());
  std::vector<std::int64_t> out(index.size());
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::size_t j = position(index, i, t.size(), who);
    if (!made[j]) {
      draws[j] = detail::draw_table(t[j]);
      made[j] = true;
    }
    const detail::DrawTable& d = draws[j];
    out[i] = t.lo[j] + detail::table_draw(d.carry.data(), d.c.data(), d.last_positive.data(),
                                          static_cast<std::int64_t>(d.last_positive.size()),
                                          static_cast<std::int64_t>(t.length(j)), d.last_tile,
                                          philox_uniform(seed, first_stream + i, counter));
  }
  return Column<std::int64_t>::host_values(std::move(out));
}

void add_indexed(Column<double>& acc, const Column<double>& x, const Column<std::int64_t>& index) {
  constexpr const char* who = "tally::gpu::add_indexed";
  if (acc.size() != index.size())
    tally::detail::fail<shape_error>(who, ": ", acc.size(), " values and ", index.size(), " indices");
  if (acc.where() != index.where() || (on_device(x.where()) && !on_device(index.where())))
    tally::detail::fail<shape_error>(who, ": the columns live in different memories (host and device)");
  if (on_device(index.where())) return population_cuda::add_indexed(acc, x, index);
  for (std::size_t i = 0; i < acc.size(); ++i) position(index, i, x.size(), who);  // checked before anything moves
  for (std::size_t i = 0; i < acc.size(); ++i) acc.host()[i] += x.host()[static_cast<std::size_t>(index.host()[i])];
}

void check_indices(const Column<std::int64_t>& index, std::size_t laws, const char* who) {
  if (on_device(index.where())) return population_cuda::check_indices(index, laws, who);
  for (std::size_t i = 0; i < index.size(); ++i) position(index, i, laws, who);
}

}  // namespace tally::gpu
