#include "tools/inspect_artifact.h"

#include <fmt/format.h>

#include <map>

#include "artifact/artifact_reader.h"
#include "core/dtype.h"
#include "tools/commands.h"

namespace yoloc::tools {
namespace {

std::string specs(const std::vector<artifact::TensorSpec>& v) {
  std::string s;
  for (const artifact::TensorSpec& t : v) {
    std::string dims;
    for (int64_t d : t.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    s += fmt::format("{}{}: {}[{}]", s.empty() ? "" : "; ", t.name, t.dtype, dims);
  }
  return s;
}

double mb(double bytes) { return bytes / 1e6; }

}  // namespace

void inspect_artifact(const std::string& path, const std::string& json, const ArtifactLoadOptions& load) {
  const std::shared_ptr<const artifact::Artifact> art = open_trusted_artifact(path, load);
  const artifact::Artifact& a = *art;
  const artifact::Manifest& m = a.manifest();
  if (!json.empty()) {
    write_json(json, artifact::manifest_to_json(m), "--json");
    if (json == "-") return;
  }
  fmt::print("artifact  {} (format {}, written by yoloc {})\n", path, a.header().format_version,
             m.tool_version);
  fmt::print("target    {}, precision {}\n", m.target, m.precision);
  fmt::print("family    {}; {} classes\n", m.family.empty() ? "(none: raw network)" : m.family,
             m.class_names.size());
  fmt::print("inputs    {}\noutputs   {}\n", specs(m.inputs), specs(m.outputs));
  for (const artifact::BlobEntry& b : m.blobs)
    fmt::print("blob      {:<12} {:<10} {:>9.2f} MB\n", b.name, b.kind, mb(static_cast<double>(b.size)));
  const nlohmann::json& plan = m.memory_plan;
  if (plan.contains("arena_bytes") && plan.contains("naive_bytes")) {
    const double arena = plan["arena_bytes"].get<double>(), naive = plan["naive_bytes"].get<double>();
    fmt::print("arena     {:.2f} MB; naive sum of intermediates {:.2f} MB ({:.1f} %)\n", mb(arena),
               mb(naive), naive > 0 ? 100.0 * arena / naive : 0.0);
  }
  if (m.program.contains("calls") && m.program["calls"].is_array()) {
    std::map<std::string, int> by_template;
    int tuned = 0;
    for (const nlohmann::json& c : m.program["calls"]) {
      const nlohmann::json task = c.value("task", nlohmann::json::object());
      ++by_template[task.value("template", std::string("?"))];
      tuned += task.value("tuned", false) ? 1 : 0;
    }
    std::string kinds;
    for (const auto& [name, n] : by_template)
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, name);
    fmt::print("kernels   {} ({}); {} tuned\n", m.program["calls"].size(), kinds, tuned);
  }
  if (m.program.contains("launches") && m.program["launches"].is_array()) {
    const size_t launches = m.program["launches"].size();
    const int lanes = m.program.value("lanes", 1);
    fmt::print("launches  {}{}; device buffer {:.2f} MB\n", launches,
               lanes > 1 ? fmt::format(" ({} lanes of {} at once)", lanes, launches / lanes) : "",
               mb(m.program.value("arena_bytes", 0.0)));
  }
  const bool unverified = a.signature() == artifact::SignatureState::kSignedNotVerified;
  fmt::print("signature {}{}\n", a.signature_text(),
             unverified ? " (Ed25519; pass --trust KEY.pub to verify it)" : "");
}

}  // namespace yoloc::tools
