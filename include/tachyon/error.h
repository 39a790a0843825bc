#pragma once
// tachyon::Error: the one exception every Tachyon call throws. Its message names
// the operation and the argument ("rms_norm_forward: weight: dtype f16 ...") or
// carries the CUDA error text of a failed call or launch.
#include <stdexcept>
#include <string>

namespace tachyon {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tachyon
