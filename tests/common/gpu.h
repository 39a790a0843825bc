#pragma once
// GPU availability for tests: any error from the runtime ("driver version is
// insufficient" on a CPU-only machine) means "no GPU", and GPU tests skip with the reason.
#include <gtest/gtest.h>

#include <string>

namespace tachyon::test {

// True when a CUDA device can run kernels; `why` says why not.
bool gpu_available(std::string* why = nullptr);

// True when TACHYON_TEST_QUICK is set (compute-sanitizer runs): skip the largest shapes.
bool quick_mode();

// TACHYON_TEST_SLICE=i/n (the sanitizers' long tests, run as n processes): true for every n-th
// case of this process from the i-th, counted by the check helpers that call it. Unset: always.
bool in_case_slice();

}  // namespace tachyon::test

#define TACHYON_REQUIRE_GPU()                                              \
  do {                                                                     \
    std::string why_;                                                      \
    if (!::tachyon::test::gpu_available(&why_)) GTEST_SKIP() << "no CUDA device: " << why_; \
  } while (0)
