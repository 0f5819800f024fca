#include "artifact/manifest.h"

#include "core/error.h"

namespace yoloc::artifact {

namespace {

using nlohmann::json;

/// Reads the fields of one JSON object, naming the path of a missing or mistyped one.
class FieldReader {
 public:
  FieldReader(const json& j, std::string path, const std::string& where)
      : j_(j), path_(std::move(path)), where_(where) {
    if (!j.is_object()) fail(path_, "an object");
  }

  const json& at(const std::string& key, json::value_t type, const char* type_name) const {
    const std::string p = path_.empty() ? key : path_ + "." + key;
    auto it = j_.find(key);
    if (it == j_.end())
      user_error(
          "artifact '{}': the manifest lacks the field '{}'; the file was not written by a "
          "compatible yoloc: recompile the model",
          where_, p);
    const bool ok = it->type() == type ||
                    (type == json::value_t::number_unsigned &&
                     it->type() == json::value_t::number_integer && it->get<int64_t>() >= 0);
    if (!ok) fail(p, type_name);
    return *it;
  }
  std::string str(const std::string& key) const {
    return at(key, json::value_t::string, "a string").get<std::string>();
  }
  uint64_t uint(const std::string& key) const {
    return at(key, json::value_t::number_unsigned, "a non-negative integer").get<uint64_t>();
  }
  const json& array(const std::string& key) const {
    return at(key, json::value_t::array, "an array");
  }
  const json& object(const std::string& key) const {
    return at(key, json::value_t::object, "an object");
  }
  std::string child(const std::string& key, size_t i) const {
    return (path_.empty() ? key : path_ + "." + key) + "[" + std::to_string(i) + "]";
  }
  [[noreturn]] void fail(const std::string& p, const char* type_name) const {
    user_error(
        "artifact '{}': the manifest field '{}' is not {}; the file is corrupt or was "
        "written by an incompatible yoloc: recompile the model",
        where_, p, type_name);
  }

 private:
  const json& j_;
  std::string path_;
  const std::string& where_;
};

json tensors_to_json(const std::vector<TensorSpec>& ts) {
  json a = json::array();
  for (const TensorSpec& t : ts)
    a.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}});
  return a;
}

std::vector<TensorSpec> tensors_from_json(const FieldReader& r, const std::string& key,
                                          const std::string& where) {
  std::vector<TensorSpec> out;
  const json& a = r.array(key);
  for (size_t i = 0; i < a.size(); ++i) {
    FieldReader e(a[i], r.child(key, i), where);
    TensorSpec t{e.str("name"), e.str("dtype"), {}};
    for (const json& d : e.array("shape")) {
      if (!d.is_number_integer()) e.fail(r.child(key, i) + ".shape", "an array of integers");
      t.shape.push_back(d.get<int64_t>());
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

const BlobEntry* Manifest::find_blob(const std::string& name) const {
  for (const BlobEntry& b : blobs)
    if (b.name == name) return &b;
  return nullptr;
}

nlohmann::json manifest_to_json(const Manifest& m) {
  json blobs = json::array();
  for (const BlobEntry& b : m.blobs)
    blobs.push_back({{"name", b.name}, {"kind", b.kind}, {"offset", b.offset}, {"size", b.size}});
  return {{"tool_version", m.tool_version},
          {"family", m.family},
          {"target", m.target},
          {"precision", m.precision},
          {"inputs", tensors_to_json(m.inputs)},
          {"outputs", tensors_to_json(m.outputs)},
          {"class_names", m.class_names},
          {"preprocess", m.preprocess},
          {"postprocess", m.postprocess},
          {"memory_plan", m.memory_plan},
          {"program", m.program},
          {"blobs", blobs}};
}

nlohmann::json parse_manifest_text(std::string_view text, const std::string& where) {
  if (text.size() > kMaxManifestBytes)
    user_error(
        "artifact '{}' is corrupt: its manifest has {} bytes, more than the {} a manifest may "
        "have; recompile the model",
        where, text.size(), kMaxManifestBytes);
  struct TooDeep {};
  const json::parser_callback_t limit_depth = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxManifestDepth) throw TooDeep{};
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), limit_depth, /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    user_error(
        "artifact '{}' is corrupt: its manifest nests deeper than {} levels; recompile the "
        "model",
        where, kMaxManifestDepth);
  }
  if (j.is_discarded())
    user_error("artifact '{}' is corrupt: its manifest is not valid JSON; recompile the model",
               where);
  return j;
}

Manifest manifest_from_json(const nlohmann::json& j, const std::string& where) {
  FieldReader r(j, "", where);
  Manifest m;
  m.tool_version = r.str("tool_version");
  m.family = r.str("family");
  m.target = r.str("target");
  m.precision = r.str("precision");
  m.inputs = tensors_from_json(r, "inputs", where);
  m.outputs = tensors_from_json(r, "outputs", where);
  const json& names = r.array("class_names");
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string()) r.fail(r.child("class_names", i), "a string");
    m.class_names.push_back(names[i].get<std::string>());
  }
  m.preprocess = r.object("preprocess");
  m.postprocess = r.object("postprocess");
  m.memory_plan = r.object("memory_plan");
  if (j.contains("program")) m.program = r.object("program");
  const json& blobs = r.array("blobs");
  for (size_t i = 0; i < blobs.size(); ++i) {
    FieldReader b(blobs[i], r.child("blobs", i), where);
    m.blobs.push_back({b.str("name"), b.str("kind"), b.uint("offset"), b.uint("size")});
  }
  return m;
}

}  // namespace yoloc::artifact
