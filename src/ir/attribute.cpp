#include "ir/attribute.h"
#include "core/error.h"

#include <fmt/format.h>

namespace yoloc {

template <typename T>
const T& Attrs::get(const std::string& name, const char* type_name) const {
  auto it = map_.find(name);
  if (it == map_.end()) user_error("required attribute '{}' is missing", name);
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  user_error("attribute '{}' has the wrong type: expected {}, got {}", name, type_name,
             attr_str(it->second));
}

int64_t Attrs::get_int(const std::string& n) const { return get<int64_t>(n, "int"); }
int64_t Attrs::get_int(const std::string& n, int64_t d) const { return has(n) ? get_int(n) : d; }
float Attrs::get_float(const std::string& n) const { return get<float>(n, "float"); }
float Attrs::get_float(const std::string& n, float d) const { return has(n) ? get_float(n) : d; }
std::string Attrs::get_string(const std::string& n) const { return get<std::string>(n, "string"); }
std::string Attrs::get_string(const std::string& n, const std::string& d) const {
  return has(n) ? get_string(n) : d;
}
std::vector<int64_t> Attrs::get_ints(const std::string& n) const {
  return get<std::vector<int64_t>>(n, "ints");
}
std::vector<int64_t> Attrs::get_ints(const std::string& n, std::vector<int64_t> d) const {
  return has(n) ? get_ints(n) : d;
}
std::vector<float> Attrs::get_floats(const std::string& n) const {
  return get<std::vector<float>>(n, "floats");
}
std::vector<float> Attrs::get_floats(const std::string& n, std::vector<float> d) const {
  return has(n) ? get_floats(n) : d;
}
std::vector<std::string> Attrs::get_strings(const std::string& n) const {
  return get<std::vector<std::string>>(n, "strings");
}
const Tensor& Attrs::get_tensor(const std::string& n) const { return get<Tensor>(n, "tensor"); }

std::string attr_str(const AttrValue& v) {
  struct V {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(float x) const { return fmt::format("{}", x); }
    std::string operator()(const std::string& x) const { return "'" + x + "'"; }
    std::string operator()(const std::vector<int64_t>& x) const {
      return fmt::format("[{}]", fmt::join(x, ", "));
    }
    std::string operator()(const std::vector<float>& x) const {
      return fmt::format("[{}]", fmt::join(x, ", "));
    }
    std::string operator()(const std::vector<std::string>& x) const {
      return fmt::format("['{}']", fmt::join(x, "', '"));
    }
    std::string operator()(const Tensor& x) const { return "<tensor " + describe(x) + ">"; }
  };
  return std::visit(V{}, v);
}

}  // namespace yoloc
