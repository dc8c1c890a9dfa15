// Which implementation runs an operation: the CUDA one (when built and a device is present) or the CPU reference.
#pragma once

#include <cstddef>
#include <string>

/// Arrays and the operations on them, each with a CUDA kernel beside a CPU reference of the same contract: the
/// functions directly in tally::gpu dispatch between the two (select()), those of tally::gpu::cpu and
/// tally::gpu::cuda are the two implementations. Knows nothing of random variables, only of arrays.
namespace tally::gpu {

/// \namespace tally::gpu::cpu
/// The CPU references: the same contract as the dispatching function of the same name in tally::gpu, always on
/// the host (what the tests compare the kernels with).

/// \namespace tally::gpu::cuda
/// The CUDA implementations: the same contract as the dispatching function of the same name in tally::gpu, always
/// on the device (cuda_error where no device can be used or the kernels are not built); the `_device` forms work
/// on device memory.

/// Where an operation runs: the CPU reference or the CUDA kernel.
enum class Backend { cpu, cuda };

/// True when this build of tally contains CUDA kernels.
bool cuda_compiled();

/// True when CUDA kernels are built, a device is present and the environment allows it (TALLY_DEVICE != cpu).
/// The device is probed once, on the first call; if CUDA is built but no device can be used, everything runs on
/// the CPU. The library prints nothing about it: device_fallback() says why, for a program to report.
bool cuda_available();

/// A line describing the device in use, or why the CPU is used.
std::string device_description();

/// Why a build with CUDA kernels runs on the CPU although nothing asked it to (no device, a driver too old for the
/// runtime, ...), in words; empty where a device is used, where the kernels are not built, or where TALLY_DEVICE=cpu
/// asked for the CPU.
std::string device_fallback();

/// The backend for an operation of `work` elementary steps (multiply-adds, say) that has a CUDA implementation
/// when `has_cuda_kernel` and needs at least `min_work` steps to pay for a launch. TALLY_DEVICE=cpu forces the
/// CPU, TALLY_DEVICE=gpu forces CUDA wherever a kernel exists and a device is present.
Backend select(bool has_cuda_kernel, double work, double min_work);

}  // namespace tally::gpu
