#pragma once
// Programmatic dependent launch, the device side (the launch attribute: core/launch.h). Both
// are no-ops in a kernel launched without the attribute, or with no such kernel after it.
#include <cuda_runtime.h>

namespace tachyon::detail {

// Blocks until the previous kernel of the stream has completed and its writes are visible.
__device__ __forceinline__ void wait_prior_grid() { cudaGridDependencySynchronize(); }

// Lets the next kernel of the stream, if launched programmatically, be scheduled once every
// CTA of this grid has called this or exited (it waits for this grid's completion itself).
__device__ __forceinline__ void allow_dependent_launch() { cudaTriggerProgrammaticLaunchCompletion(); }

}  // namespace tachyon::detail
