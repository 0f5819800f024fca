#include "targets/cuda/cuda_options.h"

#include <charconv>
#include <filesystem>

#include "passes/pipeline.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::targets {

namespace fs = std::filesystem;

int cuda_lanes(const std::string& option, int batch) {
  if (option.empty()) return 1;
  int lanes = 0;
  const auto [end, ec] = std::from_chars(option.data(), option.data() + option.size(), lanes);
  if (ec != std::errc() || end != option.data() + option.size() || lanes < 1)
    user_error("--lanes {}: expected a number of lanes (1, 2, ...)", option);
  if (batch % lanes != 0)
    user_error(
        "--lanes {}: the batch ({}) must split into {} equal lanes; choose a number "
        "that divides it",
        option, batch, lanes);
  return lanes;
}

std::string default_cuda_records(const std::string& arch) {
  const std::string name = "cuda-" + arch + ".jsonl";
  std::vector<fs::path> places;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    places.push_back(exe.parent_path().parent_path() / "share" / "yoloc" / "records" / name);
    places.push_back(exe.parent_path() / "share" / "yoloc" / "records" / name);
  }
#ifdef YOLOC_SOURCE_DIR
  places.push_back(fs::path(YOLOC_SOURCE_DIR) / "records" / name);
#endif
  for (const fs::path& p : places)
    if (fs::is_regular_file(p, ec)) return p.string();
  return "";
}

Precision cuda_precision(const std::string& name) {
  if (name == "fp16" || name == "auto") return Precision::kFp16;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp32") return Precision::kFp32;
  user_error("--precision {}: the cuda target computes in fp32, fp16 or bf16", name);
}

bool narrow_io(const std::string& io_precision, Precision precision) {
  if (io_precision.empty() || io_precision == "fp32") return false;
  const Precision io = io_precision == "fp16"   ? Precision::kFp16
                       : io_precision == "bf16" ? Precision::kBf16
                                                : Precision::kAuto;
  if (io == Precision::kAuto)
    user_error("--io-precision {}: choose fp32 (the default), fp16 or bf16", io_precision);
  if (io != precision)
    user_error(
        "--io-precision {}: narrow inputs and outputs take the type the network computes in; "
        "pass --precision {} as well, or leave --io-precision out",
        io_precision, io_precision);
  return true;
}

compiler::ImportedDetector import_for_cuda(const std::string& path, const ModelOptions& options,
                                 Precision precision, const std::vector<std::string>& outputs) {
  compiler::ImportedDetector d = compiler::import_detector(path, options);
  if (!outputs.empty()) compiler::select_outputs(*d.graph, outputs, path);
  PassContext passes;
  passes.target = cuda_attributes();
  passes.precision = precision;
  passes.narrow_io = narrow_io(options.io_precision, precision);
  optimize(*d.graph, passes);
  return d;
}

}  // namespace yoloc::targets
