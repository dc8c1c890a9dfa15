# Optional CUDA: TALLY_CUDA=AUTO enables it when nvcc is found, ON requires it, OFF skips it.
set(TALLY_HAVE_CUDA OFF)
if(NOT TALLY_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)   # the toolkit's usual place, often not on PATH
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)                  # Hopper (H100/H200) by default
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)   # CMake 3.25 knows no CUDA 20 dialect for nvcc; kernels need only C++17
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(TALLY_HAVE_CUDA ON)
  elseif(TALLY_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TALLY_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "tally: CUDA kernels ${TALLY_HAVE_CUDA} (TALLY_CUDA=${TALLY_CUDA})")
