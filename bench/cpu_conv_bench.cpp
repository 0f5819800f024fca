// Benchmark of the generated CPU conv kernels on every conv of a model (default yolov8n at its
// own input size): imports and optimizes the model for target "cpu", builds all conv groups
// with their default schedule configs into one shared object, times each layer (median of N
// runs) and the whole sequence at 1 and 2 threads, and compares with ONNX Runtime's time for
// the whole model (bench/ort_model.py, run before and after ours). Writes JSON.
//
//   yoloc_cpu_conv_bench [MODEL.onnx] [--iters N] [--json FILE] [--ort-script PATH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/host_compiler.h"
#include "codegen/cpu/parallel.h"
#include "frontend/onnx/importer.h"
#include "passes/pipeline.h"

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
  int iters = 15;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = std::stoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--ort-script" && i + 1 < argc) ort_script = argv[++i];
    else model = a;
  }
  try {
    auto g = onnx_frontend::import_onnx(model);
    PassContext ctx;
    ctx.target = "cpu";
    optimize(*g, ctx);
    std::vector<Layer> layers;
    int convs = 0, unmatched = 0;
    std::string source;
    for (const FusedGroup& grp : g->groups) {
      bool is_conv = false;
      for (const Node* n : g->nodes()) is_conv |= n->id == grp.anchor && n->op == "Conv";
      if (!is_conv) continue;
      ++convs;
      const auto t = conv_task_from_group(*g, grp);
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
    const SharedObject so = compile_shared_object(source);
    const double compile_s = std::chrono::duration<double>(Clock::now() - c0).count();
    LoadedLibrary lib(so.bytes);
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
    std::printf("%s: %d convs, %d generated, %.2f GFLOP, one shared object of %zu KiB built in "
                "%.1f s\n", model.c_str(), convs, static_cast<int>(layers.size()), gflop,
                so.bytes.size() / 1024, compile_s);

    nlohmann::json result;
    result["model"] = model;
    result["convs"] = convs;
    result["generated"] = layers.size();
    result["gflop"] = gflop;
    result["compile_s"] = compile_s;
    result["hardware_threads"] = std::thread::hardware_concurrency();
    result["ort_before"] = run_ort(ort_script, model, 2);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      const auto run_layer = [&](Layer& l) {
        pool.parallel_for(l.kernel.work_items, [&](int64_t b, int64_t e) {
          l.fn(l.in.data(), l.w.data(), l.bias.data(), l.res.empty() ? nullptr : l.res.data(),
               l.out.data(), b, e);
        });
      };
      nlohmann::json per_layer = nlohmann::json::array();
      double sum_ms = 0;
      for (Layer& l : layers) {
        run_layer(l);
        std::vector<double> ms;
        for (int i = 0; i < iters; ++i) {
          const auto a = Clock::now();
          run_layer(l);
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
        }
        const double m = median(ms);
        sum_ms += m;
        per_layer.push_back({{"key", l.task.key()}, {"config", l.cfg.str()}, {"median_ms", m},
                             {"gflops", l.task.flops() / m / 1e6}});
        if (threads == 2) {
          std::printf("  %-80s %-40s %7.3f ms %6.1f GFLOP/s\n", l.task.key().c_str(),
                      l.cfg.str().c_str(), m, l.task.flops() / m / 1e6);
        }
      }
      std::vector<double> seq;
      for (int i = 0; i < iters; ++i) {
        const auto a = Clock::now();
        for (Layer& l : layers) run_layer(l);
        seq.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      }
      const double seq_ms = median(seq);
      std::printf("threads %d: sum of layer medians %.2f ms (%.1f GFLOP/s), whole sequence median "
                  "%.2f ms (min %.2f)\n", threads, sum_ms, gflop / sum_ms * 1e3, seq_ms,
                  *std::min_element(seq.begin(), seq.end()));
      const std::string k = "threads_" + std::to_string(threads);
      result[k] = {{"sum_of_layer_medians_ms", sum_ms}, {"sequence_median_ms", seq_ms},
                   {"sequence_min_ms", *std::min_element(seq.begin(), seq.end())},
                   {"layers", per_layer}};
    }
    result["ort_after"] = run_ort(ort_script, model, 2);
    for (const char* k : {"ort_before", "ort_after"}) {
      if (!result[k].is_null()) {
        std::printf("ONNX Runtime %s, whole model, 2 threads (%s): median %.2f ms, min %.2f ms\n",
                    result[k].value("ort_version", "?").c_str(), k,
                    result[k]["median_ms"].get<double>(), result[k]["min_ms"].get<double>());
      }
    }
    std::ofstream(json_path) << result.dump(2) << "\n";
    std::printf("wrote %s\n", json_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
