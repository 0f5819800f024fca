#include "quant/calibration_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "artifact/signing.h"

namespace yoloc::quant {

namespace {

constexpr const char* kFormat = "yoloc-int8-calibration";
constexpr int kVersion = 1;

nlohmann::json to_json(const Calibration& c) {
  nlohmann::json convs = nlohmann::json::array();
  for (const ConvChoice& k : c.convs) {
    nlohmann::json j = {{"conv", k.conv}, {"input", k.input}};
    if (!k.float_reason.empty()) j["float"] = k.float_reason;
    convs.push_back(j);
  }
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, s] : c.tensors) {
    const ActivationQuant q = activation_quant(s.histogram, c.method);
    tensors[name] = {{"min", s.histogram.min()},
                     {"max", s.histogram.max()},
                     {"scale", q.scale},
                     {"zero_point", q.zero_point},
                     {"range", s.histogram.range()},
                     {"counts", s.histogram.counts()},
                     {"channel_means", s.channel_means()}};
  }
  nlohmann::json sensitivity = nlohmann::json::array();
  for (const LayerSensitivity& l : c.sensitivity)
    sensitivity.push_back({{"conv", l.conv}, {"error", l.error}});
  return {{"format", kFormat},
          {"version", kVersion},
          {"model", {{"sha256", c.model_digest}, {"path", c.model}}},
          {"input", {{"width", c.input_w}, {"height", c.input_h}}},
          {"calibration", {{"folder", c.folder}, {"images", c.images}}},
          {"method", std::string(method_name(c.method))},
          {"convs", convs},
          {"tensors", tensors},
          {"sensitivity", sensitivity}};
}

}  // namespace

std::string model_digest(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("cannot read the model '{}'", path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  const artifact::Digest d =
      artifact::sha256({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  std::string hex;
  for (std::byte b : d) hex += fmt::format("{:02x}", static_cast<unsigned>(b));
  return hex;
}

void write_calibration(const Calibration& c, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!(f << to_json(c).dump() << "\n")) {
      std::error_code ec;
      fs::remove(tmp, ec);
      user_error("-o {}: cannot write the calibration file", path);
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    user_error("-o {}: cannot write the calibration file", path);
  }
}

Calibration read_calibration(const std::string& path, const std::string& digest) {
  std::ifstream f(path);
  if (!f) user_error("--calibration-file {}: cannot read it", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception&) {
    user_error("--calibration-file {}: not JSON; give a file `yoloc calibrate -o` wrote", path);
  }
  if (!j.is_object() || j.value("format", "") != kFormat || j.value("version", 0) != kVersion)
    user_error("--calibration-file {}: not a yoloc int8 calibration (version {}); give a file "
               "`yoloc calibrate -o` wrote",
               path, kVersion);
  Calibration c;
  try {
    c.model_digest = j.at("model").at("sha256").get<std::string>();
    c.model = j.at("model").value("path", "");
    if (c.model_digest != digest)
      user_error("--calibration-file {}: it calibrates another model ({}); calibrate this one "
                 "with `yoloc calibrate MODEL --calibration DIR -o FILE`",
                 path, c.model.empty() ? "other digest" : c.model);
    c.input_w = j.at("input").at("width").get<int>();
    c.input_h = j.at("input").at("height").get<int>();
    c.folder = j.at("calibration").value("folder", "");
    c.images = j.at("calibration").at("images").get<int>();
    c.method = parse_method(j.at("method").get<std::string>());
    for (const auto& k : j.at("convs"))
      c.convs.push_back({k.at("conv").get<std::string>(), k.at("input").get<std::string>(),
                         k.value("float", "")});
    for (const auto& [name, t] : j.at("tensors").items()) {
      TensorStats s{Histogram(t.at("range").get<double>(), t.at("counts").get<std::vector<double>>(),
                              t.at("min").get<double>(), t.at("max").get<double>()),
                    t.at("channel_means").get<std::vector<double>>(), 1.0};
      c.tensors.emplace(name, std::move(s));
    }
    for (const auto& l : j.value("sensitivity", nlohmann::json::array()))
      c.sensitivity.push_back({l.at("conv").get<std::string>(), l.at("error").get<double>()});
  } catch (const nlohmann::json::exception& e) {
    user_error("--calibration-file {}: malformed ({}); calibrate again", path, e.what());
  }
  return c;
}

}  // namespace yoloc::quant
