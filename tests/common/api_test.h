#pragma once
// Helpers for the CPU validation tests: fake device addresses (validation must fail before
// anything dereferences them) and expectations on the outcome of a call:
//  - expect_error: rejected by validation: a tachyon::Error whose message names every given
//    fragment (the op, the argument, what is wrong) and is not a CUDA error. On the GPU-less
//    CI machine every CUDA call fails, so a validation error proves no CUDA call was made.
//  - expect_reaches_cuda: accepted by validation. Without a GPU the call then fails at its
//    first CUDA call (an Error that says "CUDA error"); a call that returns normally did
//    nothing (a silent no-op) and fails the test. With a GPU the call is not made (its fake
//    pointers would be launched on).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "common/gpu.h"
#include "tachyon/error.h"

namespace tachyon::test {

inline void* fake(std::uintptr_t addr) { return reinterpret_cast<void*>(addr); }

inline bool is_cuda_error(const std::string& msg) { return msg.find("CUDA error") != std::string::npos; }

template <class F>
void expect_error(F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no tachyon::Error thrown";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_FALSE(is_cuda_error(msg)) << "reached CUDA instead of failing validation: " << msg;
    for (const char* frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}

template <class F>
void expect_reaches_cuda(F&& f) {
  if (gpu_available()) return;
  try {
    f();
    ADD_FAILURE() << "returned without a CUDA call: validation accepted the call but nothing ran";
  } catch (const Error& e) {
    EXPECT_TRUE(is_cuda_error(e.what())) << "rejected by validation: " << e.what();
  }
}

}  // namespace tachyon::test
