// Benchmark of the generated CPU conv kernels on every conv of a model (default yolov8n at its
// own input size): imports and optimizes the model for target "cpu", builds all conv groups
// with their default schedule configs into one shared object, times each layer (median of N
// runs) and the whole sequence at 1 and 2 threads, and compares with ONNX Runtime's time for
// the whole model (bench/ort_model.py), in alternating rounds. Writes JSON.
//
//   yoloc_cpu_conv_bench [MODEL.onnx] [--iters N] [--rounds N] [--json FILE] [--ort-script PATH]
//                        [--isa avx512|avx2|neon|generic]   (default: this machine's)
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/host_compiler.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "frontend/onnx/importer.h"
#include "passes/pipeline.h"
#include "targets/cpu/cpu_attributes.h"

using namespace yoloc;
using namespace yoloc::codegen::cpu;
using yoloc::codegen::ScheduleConfig;

namespace {

using KernelFn = void (*)(const float*, const float*, const float*, const float*, float*, int64_t,
                          int64_t);
using Clock = std::chrono::steady_clock;

struct Layer {
  ConvTask task;
  ScheduleConfig cfg;
  CpuKernel kernel;
  KernelFn fn = nullptr;
  std::vector<float> in, w, bias, res, out;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

nlohmann::json run_ort(const std::string& script, const std::string& model, int threads) {
  const std::string cmd = "python3 '" + script + "' --model '" + model + "' --threads " +
                          std::to_string(threads) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return nullptr;
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  try {
    return nlohmann::json::parse(out);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "/work/shared/models/yolov8n.onnx", json_path = "cpu_conv_bench.json";
  std::string ort_script = std::string(YOLOC_SOURCE_DIR) + "/bench/ort_model.py";
  int iters = 15, rounds = 5;
  CpuIsa isa = detect_host_isa();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = std::stoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::stoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--ort-script" && i + 1 < argc) ort_script = argv[++i];
    else if (a == "--isa" && i + 1 < argc) {
      const auto v = parse_isa(argv[++i]);
      if (!v) {
        std::fprintf(stderr, "error: --isa takes one of %s\n", isa_names().c_str());
        return 1;
      }
      isa = *v;
    }
    else model = a;
  }
  try {
    auto g = onnx_frontend::import_onnx(model);
    PassContext ctx;
    ctx.target = targets::cpu_attributes();
    optimize(*g, ctx);
    std::vector<Layer> layers;
    int convs = 0, unmatched = 0;
    std::string source;
    for (const FusedGroup& grp : g->groups) {
      bool is_conv = false;
      for (const Node* n : g->nodes()) is_conv |= n->id == grp.anchor && n->op == "Conv";
      if (!is_conv) continue;
      ++convs;
      auto t = conv_task_from_group(*g, grp);
      if (t) t->isa = isa;
      if (!t || !ConvTemplate::matches(*t)) {
        ++unmatched;
        std::printf("not generated: group %d %s\n", grp.id, grp.name.c_str());
        continue;
      }
      Layer l;
      l.task = *t;
      l.cfg = ConvTemplate::default_config(*t);
      l.kernel = ConvTemplate::emit(*t, l.cfg, "conv" + std::to_string(layers.size()));
      source += l.kernel.source;
      layers.push_back(std::move(l));
    }
    const auto c0 = Clock::now();
    const SharedObject so = compile_shared_object(source, host_compiler_options_for("c++", isa));
    const double compile_s = std::chrono::duration<double>(Clock::now() - c0).count();
    runtime::KernelLibrary lib(so.bytes);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    const auto fill = [&](size_t n) {
      std::vector<float> v(n);
      for (float& x : v) x = d(rng);
      return v;
    };
    double gflop = 0;
    for (Layer& l : layers) {
      const ConvTask& t = l.task;
      const int64_t cb = (t.c + 15) / 16;
      l.fn = reinterpret_cast<KernelFn>(lib.symbol(l.kernel.symbol));
      l.in = fill(static_cast<size_t>(t.c < 16 ? t.n * t.c * t.h * t.w : t.n * cb * 16 * t.h * t.w));
      const auto w = fill(static_cast<size_t>(t.k * t.c * t.kh * t.kw));
      for (float& x : l.in) x *= 0.5f;
      l.w = ConvTemplate::pack_weights(t, l.cfg, w.data());
      for (float& x : l.w) x *= 0.05f;
      l.bias = fill(static_cast<size_t>(t.k));
      l.out.assign(static_cast<size_t>(t.n * t.k * t.oh * t.ow), 0.f);
      if (t.residual) l.res = fill(l.out.size());
      gflop += t.flops() / 1e9;
    }
    std::printf("%s: %d convs, %d generated for %s, %.2f GFLOP, one shared object of %zu KiB "
                "built in %.1f s\n", model.c_str(), convs, static_cast<int>(layers.size()),
                isa_name(isa), gflop, so.bytes.size() / 1024, compile_s);

    nlohmann::json result;
    result["model"] = model;
    result["isa"] = isa_name(isa);
    result["convs"] = convs;
    result["generated"] = layers.size();
    result["gflop"] = gflop;
    result["compile_s"] = compile_s;
    result["hardware_threads"] = std::thread::hardware_concurrency();
    // Per-layer medians, then alternating rounds of ONNX Runtime (whole model) and our conv
    // sequence at 1 and 2 threads, so both see the same machine load.
    std::vector<std::unique_ptr<runtime::ThreadPool>> pools;
    for (int threads : {1, 2}) pools.push_back(std::make_unique<runtime::ThreadPool>(threads));
    const auto run_layer = [&](runtime::ThreadPool& pool, Layer& l) {
      pool.parallel_for(l.kernel.work_items, [&](int64_t b, int64_t e) {
        l.fn(l.in.data(), l.w.data(), l.bias.data(), l.res.empty() ? nullptr : l.res.data(),
             l.out.data(), b, e);
      });
    };
    // Per layer: wall-clock medians at 1 and 2 threads, and the 1-thread CPU-time median (the
    // load-independent figure on a shared machine).
    nlohmann::json per_layer = nlohmann::json::array();
    double sum_ms[2] = {0, 0}, sum_cpu_ms = 0;
    std::printf("  %-66s %-36s %9s %9s %9s %8s\n", "layer", "config", "1t ms", "2t ms",
                "1t cpu ms", "GFLOP/s");
    for (Layer& l : layers) {
      double m[2];
      std::vector<double> cpu;
      for (int p = 0; p < 2; ++p) {
        runtime::ThreadPool& pool = *pools[static_cast<size_t>(p)];
        run_layer(pool, l);
        std::vector<double> ms;
        for (int i = 0; i < iters; ++i) {
          const auto a = Clock::now();
          const double c0 = thread_cpu_ms();
          run_layer(pool, l);
          if (p == 0) cpu.push_back(thread_cpu_ms() - c0);
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
        }
        m[p] = median(ms);
        sum_ms[p] += m[p];
      }
      const double c = median(cpu);
      sum_cpu_ms += c;
      per_layer.push_back({{"key", l.task.key()}, {"config", l.cfg.str()},
                           {"median_ms_1thread", m[0]}, {"median_ms_2threads", m[1]},
                           {"cpu_median_ms_1thread", c}, {"gflops_cpu", l.task.flops() / c / 1e6}});
      std::printf("  %-66s %-36s %9.3f %9.3f %9.3f %8.1f\n", l.task.key().c_str() + 19,
                  l.cfg.str().c_str(), m[0], m[1], c, l.task.flops() / c / 1e6);
    }
    result["layers"] = per_layer;
    result["sum_cpu_median_ms_1thread"] = sum_cpu_ms;
    for (int p = 0; p < 2; ++p) {
      result["threads_" + std::to_string(p + 1)]["sum_of_layer_medians_ms"] = sum_ms[p];
    }
    std::printf("sum of layer medians: 1 thread %.2f ms, 2 threads %.2f ms; 1-thread CPU time "
                "%.2f ms (%.1f GFLOP/s)\n", sum_ms[0], sum_ms[1], sum_cpu_ms,
                gflop / sum_cpu_ms * 1e3);
    std::vector<double> ort_ms, ort1_cpu_ms, seq_cpu_ms, seq_ms[2];
    nlohmann::json ort_rounds = nlohmann::json::array();
    for (int r = 0; r < rounds; ++r) {
      const nlohmann::json ort = run_ort(ort_script, model, 2);
      if (!ort.is_null()) ort_ms.push_back(ort["median_ms"].get<double>());
      ort_rounds.push_back(ort);
      const nlohmann::json ort1 = run_ort(ort_script, model, 1);
      if (!ort1.is_null()) ort1_cpu_ms.push_back(ort1["cpu_median_ms"].get<double>());
      {
        std::vector<double> cpu;
        for (int i = 0; i < iters; ++i) {
          const double c0 = thread_cpu_ms();
          for (Layer& l : layers) run_layer(*pools[0], l);
          cpu.push_back(thread_cpu_ms() - c0);
        }
        seq_cpu_ms.push_back(median(cpu));
      }
      for (int p = 0; p < 2; ++p) {
        std::vector<double> seq;
        for (int i = 0; i < iters; ++i) {
          const auto a = Clock::now();
          for (Layer& l : layers) run_layer(*pools[static_cast<size_t>(p)], l);
          seq.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
        }
        seq_ms[p].push_back(median(seq));
      }
      std::printf("round %d: ORT whole model (2 threads) %.2f ms | our convs: 1 thread %.2f ms, "
                  "2 threads %.2f ms\n", r, ort_ms.empty() ? -1.0 : ort_ms.back(),
                  seq_ms[0].back(), seq_ms[1].back());
    }
    result["ort_rounds"] = ort_rounds;
    for (int p = 0; p < 2; ++p) {
      const std::string k = "threads_" + std::to_string(p + 1);
      result[k]["sequence_round_medians_ms"] = seq_ms[p];
      result[k]["sequence_median_ms"] = median(seq_ms[p]);
    }
    result["threads_1"]["sequence_cpu_median_ms"] = median(seq_cpu_ms);
    if (!ort1_cpu_ms.empty()) {
      result["ort_1thread_cpu_median_ms"] = median(ort1_cpu_ms);
      std::printf("CPU time, 1 thread: ORT whole model %.2f ms; our convs %.2f ms = %.2fx ORT\n",
                  median(ort1_cpu_ms), median(seq_cpu_ms), median(seq_cpu_ms) / median(ort1_cpu_ms));
    }
    if (!ort_ms.empty()) {
      result["ort_median_ms"] = median(ort_ms);
      result["conv2_over_ort"] = median(seq_ms[1]) / median(ort_ms);
      std::printf("median over %d rounds: ORT %s whole model %.2f ms; our %d convs %.2f ms (1 "
                  "thread), %.2f ms (2 threads) = %.2fx ORT\n", rounds,
                  ort_rounds[0].value("ort_version", "?").c_str(), median(ort_ms),
                  static_cast<int>(layers.size()), median(seq_ms[0]), median(seq_ms[1]),
                  median(seq_ms[1]) / median(ort_ms));
    } else {
      std::printf("ONNX Runtime not measured (python3 + onnxruntime missing?)\n");
    }
    std::ofstream(json_path) << result.dump(2) << "\n";
    std::printf("wrote %s\n", json_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
