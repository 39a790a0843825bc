#pragma once
// Helpers for the CPU validation tests: fake device addresses (validation must fail before
// anything dereferences them) and an expectation that a call throws tachyon::Error whose
// message names every given fragment (the op, the argument, what is wrong).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "tachyon/error.h"

namespace tachyon::test {

inline void* fake(std::uintptr_t addr) { return reinterpret_cast<void*>(addr); }

template <class F>
void expect_error(F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no tachyon::Error thrown";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const char* frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}

}  // namespace tachyon::test
