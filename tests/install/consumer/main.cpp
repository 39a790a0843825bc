// Compiles the README's C++ example as written, then calls the API the way a user would: a
// bad call must throw tachyon::Error before any CUDA call (so this runs without a GPU).
#include <tachyon/tachyon.h>

#include <cstdio>
#include <cstring>

// ---- README example, verbatim ----
// y = silu(gate) * up over a (tokens, 14336) bf16 activation, on `stream`.
void mlp_act(const void* gate, const void* up, void* y, int64_t tokens, cudaStream_t stream) {
  using namespace tachyon;
  auto g = view(gate, DType::bf16, {tokens, 14336});
  auto u = view(up, DType::bf16, {tokens, 14336});
  swiglu(g, u, view(y, DType::bf16, {tokens, 14336}), stream);  // throws tachyon::Error on bad input
}
// ---- end of the README example ----

int main() {
  using namespace tachyon;
  alignas(16) static unsigned char buf[3][64];
  try {
    // Shapes differ: validation must refuse before touching the (host) pointers.
    swiglu(view(buf[0], DType::bf16, {2, 16}), view(buf[1], DType::bf16, {2, 8}), view(buf[2], DType::bf16, {2, 16}));
  } catch (const Error& e) {
    if (std::strncmp(e.what(), "swiglu: up:", 11) == 0) {
      std::printf("consumer: ok (%s)\n", e.what());
      (void)&mlp_act;
      return 0;
    }
    std::printf("consumer: unexpected message: %s\n", e.what());
    return 1;
  }
  std::printf("consumer: no error for mismatched shapes\n");
  return 1;
}
