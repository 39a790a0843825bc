// A deterministic driver for the validation fuzz target (validation_fuzz.cpp) where no
// compiler with -fsanitize=fuzzer is available: runs every corpus file given, then N inputs
// made from the corpus by random byte mutations and N fresh random inputs, from a fixed seed.
//   tachyon_validation_fuzz [-runs=N] [-seed=S] [-max_total_time=SECONDS] [corpus dirs or files...]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" long long tachyon_fuzz_stats[8];

namespace {

std::uint64_t state = 0x9e3779b97f4a7c15ull;
std::uint64_t next() {  // xorshift64*
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545f4914f6cdd1dull;
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  long long runs = 100000;
  double max_seconds = 0;
  std::vector<std::vector<std::uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strncmp(a, "-runs=", 6)) runs = std::atoll(a + 6);
    else if (!std::strncmp(a, "-seed=", 6)) state = std::strtoull(a + 6, nullptr, 10) * 0x9e3779b97f4a7c15ull + 1;
    else if (!std::strncmp(a, "-max_total_time=", 16)) max_seconds = std::atof(a + 16);
    else if (a[0] == '-') continue;  // libFuzzer flags this driver does not have
    else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) corpus.push_back(read_file(e.path()));
    } else {
      corpus.push_back(read_file(a));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& c : corpus) LLVMFuzzerTestOneInput(c.data(), c.size());
  long long done = 0;
  std::vector<std::uint8_t> buf;
  for (; done < runs; ++done) {
    if (max_seconds > 0 && (done & 1023) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > max_seconds)
      break;
    if (!corpus.empty() && next() % 2 == 0) {  // a corpus input with a few bytes changed, cut or grown
      buf = corpus[next() % corpus.size()];
      const int edits = 1 + static_cast<int>(next() % 8);
      for (int e = 0; e < edits; ++e) {
        const std::uint64_t r = next();
        if (buf.empty() || r % 8 == 0) buf.push_back(static_cast<std::uint8_t>(r >> 8));
        else if (r % 8 == 1 && buf.size() > 1) buf.resize(buf.size() - 1);
        else buf[(r >> 8) % buf.size()] = static_cast<std::uint8_t>(r >> 32);
      }
    } else {
      buf.resize(next() % 256);
      for (auto& b : buf) b = static_cast<std::uint8_t>(next());
    }
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("validation fuzz driver: %zu corpus inputs + %lld generated in %.1f s: %lld rejected, %lld reached CUDA, "
              "%lld no-op, %lld conservative overlap rejections, %lld undecided; no findings\n",
              corpus.size(), done, secs, tachyon_fuzz_stats[0], tachyon_fuzz_stats[1], tachyon_fuzz_stats[2],
              tachyon_fuzz_stats[3], tachyon_fuzz_stats[4]);
  return 0;
}
