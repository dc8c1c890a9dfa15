// The MPI bootstrap of the NCCL communicator: rank 0's unique id broadcast to every rank, one GPU per local rank.
// MPI's C API only (Open MPI and MPICH would otherwise pull in their deprecated C++ bindings)
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>

#include "tally/error.hpp"
#include "tally/runtime/nccl_communicator.hpp"

namespace tally::runtime {

namespace {
void check(int r, const char* what) {
  if (r != MPI_SUCCESS) throw communicator_error(tally::detail::message("tally::runtime::MpiBootstrap: ", what, " failed (", r, ")"));
}
}  // namespace

bool MpiBootstrap::launched() {
  // Open MPI's mpirun, PMIx launchers (Open MPI 5, Slurm's srun --mpi=pmix), MPICH's Hydra and Slurm
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

MpiBootstrap::MpiBootstrap(int* argc, char*** argv) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    check(MPI_Init(argc, argv), "MPI_Init");
    finalize_ = true;
  }
  int rank = 0, size = 1, local = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  MPI_Comm host;  // the ranks of this host
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host), "MPI_Comm_split_type");
  check(MPI_Comm_rank(host, &local), "MPI_Comm_rank");
  MPI_Comm_free(&host);
  rank_ = static_cast<std::size_t>(rank);
  size_ = static_cast<std::size_t>(size);
  local_rank_ = static_cast<std::size_t>(local);
}

MpiBootstrap::~MpiBootstrap() {
  if (finalize_) MPI_Finalize();
}

std::shared_ptr<NcclCommunicator> MpiBootstrap::nccl(int device) const {
  NcclCommunicator::Id id{};
  if (rank_ == 0) id = NcclCommunicator::unique_id();
  check(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (device < 0) device = detail::device_of_local_rank(local_rank_, "tally::runtime::MpiBootstrap");
  return std::make_shared<NcclCommunicator>(id, rank_, size_, device);
}

}  // namespace tally::runtime
