// tachyon-bench: runs the registered benchmark cases, prints a table, writes JSON lines.
//   tachyon-bench                       the default suite
//   tachyon-bench --suite all|<family>  every case of a family (elementwise, norm, ...)
//   tachyon-bench --suite host          host time per call of each op at a tiny shape, beside
//                                       the floor of a bare launch (bench_host.cpp; only run
//                                       when asked: not in default nor all); --op CASE for one
//                                       (tachyon-bench --list: the "host" rows)
//   tachyon-bench --op add --dtype bf16 --shape 32768x32768
//   --results DIR   append JSON lines to DIR/<gpu>-<date>.jsonl
//   --iters N --warmup N
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <string>

#include "bench_host.h"
#include "harness.h"

#ifndef TACHYON_GIT_COMMIT
#define TACHYON_GIT_COMMIT "unknown"
#endif

using namespace tachyon;
using namespace tachyon::bench;

namespace {

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o;
}

bool parse_dtype(const std::string& s, DType* d) {
  for (DType x : {DType::f32, DType::f16, DType::bf16})
    if (s == dtype_name(x)) { *d = x; return true; }
  return false;
}

void usage() {
  std::puts("usage: tachyon-bench [--suite default|all|host|FAMILY] [--op OP] [--dtype f32|f16|bf16] "
            "[--shape AxB[xC]] [--results DIR] [--iters N] [--warmup N] [--list]\n"
            "  --suite default   the default cases of every family; all: every case of every family\n"
            "  --suite FAMILY    every case of one family (see --list)\n"
            "  --suite host      host time per call of each op at a tiny shape (4x4096 bf16) beside the\n"
            "                    floor of a bare cudaLaunchKernel, in us; a few seconds; not part of\n"
            "                    default or all. --op CASE runs one case (--list host); --iters N sets\n"
            "                    the rounds (>= 50) of 100 calls each\n"
            "  --results DIR     append JSON lines to DIR/<gpu>-<date>.jsonl (host rows: \"suite\": \"host\")\n"
            "  --list            list the cases");
}

}  // namespace

int main(int argc, char** argv) {
  std::string suite = "default", op_filter, results_dir;
  std::string shape_arg;
  DType dtype_filter{};
  bool have_dtype = false, list = false;
  int iters = 50, warmup = 10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { usage(); std::exit(2); }
      return argv[++i];
    };
    if (a == "--suite") suite = next();
    else if (a == "--op") op_filter = next();
    else if (a == "--dtype") { if (!parse_dtype(next(), &dtype_filter)) { usage(); return 2; } have_dtype = true; }
    else if (a == "--shape") shape_arg = next();
    else if (a == "--results") results_dir = next();
    else if (a == "--iters") iters = std::atoi(next().c_str());
    else if (a == "--warmup") warmup = std::atoi(next().c_str());
    else if (a == "--list") list = true;
    else { usage(); return a == "--help" || a == "-h" ? 0 : 2; }
  }
  if (list) {
    for (const Case& c : registry()) {
      std::string dtypes;
      for (DType dt : c.dtypes) dtypes += std::string(dtypes.empty() ? "" : ",") + dtype_name(dt);
      std::printf("%-12s %-28s %-14s %s\n", c.family.c_str(), c.op.c_str(), dtypes.c_str(),
                  c.in_default_suite ? "default" : "all");
    }
    for (const std::string& n : host_case_names()) std::printf("%-12s %-28s %-14s %s\n", "host", n.c_str(), "-", "host");
    return 0;
  }

  try {
    Device dev;
    dev.iters = iters < 50 ? 50 : iters;  // protocol: median of >= 50
    dev.warmup = warmup < 10 ? 10 : warmup;
    const std::string date = today();
    // The build may predate the last commit; the device script passes the checked-out one.
    const char* env_commit = std::getenv("TACHYON_GIT_COMMIT");
    const std::string commit = env_commit && *env_commit ? env_commit : TACHYON_GIT_COMMIT;

    std::FILE* json = nullptr;
    if (!results_dir.empty()) {
      std::string gpu = dev.name();
      for (char& c : gpu) if (c == ' ' || c == '/') c = '_';
      std::string path = results_dir + "/" + gpu + "-" + date + ".jsonl";
      json = std::fopen(path.c_str(), "a");
      if (!json) std::fprintf(stderr, "warning: cannot open %s\n", path.c_str());
    }

    if (suite == "host") {
      std::printf("tachyon-bench --suite host  %s  %d SMs  %s  commit %s\n", dev.name().c_str(), dev.sm_count(),
                  date.c_str(), commit.c_str());
      HostSuiteOptions opt;
      opt.op_filter = op_filter;
      opt.rounds = dev.iters;
      opt.json = json;
      opt.gpu = json_escape(dev.name());
      opt.date = date;
      opt.commit = json_escape(commit);
      const int failures = run_host_suite(dev, opt);
      if (json) std::fclose(json);
      return failures ? 1 : 0;
    }

    const double copy = dev.copy_gbps();
    std::printf("tachyon-bench  %s  %d SMs  L2 %zu MB  %s  commit %s\n", dev.name().c_str(), dev.sm_count(),
                dev.l2_bytes() >> 20, date.c_str(), commit.c_str());
    std::printf("device-to-device copy (1 GiB, read+write): %.0f GB/s  <- the memory limit of this run\n\n", copy);
    std::printf("%-20s %-5s %-18s %10s %10s %8s %8s  %s\n", "op", "dtype", "shape", "time(us)", "GB/s|TF/s",
                "limit", "ratio", "peer");

    int failures = 0;
    for (const Case& c : registry()) {
      bool family_ok = suite == "all" || suite == c.family || (suite == "default" && c.in_default_suite);
      if (!op_filter.empty()) family_ok = (suite == "default" || suite == "all" || suite == c.family) && c.op == op_filter;
      if (!family_ok) continue;
      for (DType dt : c.dtypes) {
        if (have_dtype && dt != dtype_filter) continue;
        std::vector<Shape> shapes = c.shapes;
        if (!shape_arg.empty()) shapes = {Shape::parse(shape_arg)};
        for (const Shape& sh : shapes) {
          if (shape_arg.empty() && c.applies && !c.applies(dt, sh)) continue;
          Result r;
          try {
            r = c.run(dev, dt, sh);
          } catch (const std::exception& e) {
            std::printf("%-20s %-5s %-18s  FAILED: %s\n", c.op.c_str(), dtype_name(dt), sh.str().c_str(), e.what());
            ++failures;
            continue;
          }
          r.op = r.op.empty() ? c.op : r.op;
          r.dtype = dtype_name(dt);
          r.shape = sh;
          const bool is_flops = r.flops > 0;
          if (is_flops) {
            r.tflops = r.flops / (r.ms * 1e-3) / 1e12;
          } else {
            r.gbps = r.bytes / (r.ms * 1e-3) / 1e9;
            r.limit = copy;
            r.ratio = r.gbps / copy;
            if (r.peer.empty()) {
              Peer p = lookup_peer(r.op, dt, sh);
              if (p.value > 0) { r.peer = p.name; r.peer_value = p.value; }
            }
          }
          if (is_flops && r.limit > 0) r.ratio = r.tflops / r.limit;
          char peer[96] = "";
          if (!r.peer.empty()) std::snprintf(peer, sizeof peer, "%s %.0f (x%.2f)", r.peer.c_str(), r.peer_value,
                                             (is_flops ? r.tflops : r.gbps) / r.peer_value);
          std::printf("%-20s %-5s %-18s %10.1f %10.1f %8.0f %8.3f  %s%s%s\n", r.op.c_str(), r.dtype.c_str(),
                      sh.str().c_str(), r.ms * 1e3, is_flops ? r.tflops : r.gbps, r.limit, r.ratio, peer,
                      r.note.empty() ? "" : "  ", r.note.c_str());
          std::fflush(stdout);
          if (json) {
            std::fprintf(json,
                         "{\"op\": \"%s\", \"impl\": \"%s\", \"dtype\": \"%s\", \"shape\": \"%s\", \"ms\": %.6f, "
                         "\"%s\": %.2f, \"limit\": %.2f, \"limit_kind\": \"%s\", \"ratio\": %.4f, \"peer\": \"%s\", "
                         "\"peer_value\": %.2f, \"gpu\": \"%s\", \"date\": \"%s\", \"commit\": \"%s\"%s%s%s}\n",
                         r.op.c_str(), r.impl.c_str(), r.dtype.c_str(), sh.str().c_str(), r.ms,
                         is_flops ? "tflops" : "gbps", is_flops ? r.tflops : r.gbps, r.limit,
                         is_flops ? "cublas_same_run" : "copy_same_run", r.ratio, json_escape(r.peer).c_str(),
                         r.peer_value, json_escape(dev.name()).c_str(), date.c_str(), commit.c_str(),
                         r.note.empty() ? "" : ", \"note\": \"", json_escape(r.note).c_str(),
                         r.note.empty() ? "" : "\"");
            std::fflush(json);
          }
        }
      }
    }
    if (json) std::fclose(json);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::printf("tachyon-bench: %s\n", e.what());
    return 1;
  }
}
