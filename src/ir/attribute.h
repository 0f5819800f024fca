#pragma once
/// Node attributes: a name -> value map with typed getters that raise a UserError naming the
/// attribute when it is missing or has the wrong type.
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "yoloc/tensor.h"

namespace yoloc {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

class Attrs {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }
  const std::map<std::string, AttrValue>& all() const { return map_; }

  int64_t get_int(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t dflt) const;
  float get_float(const std::string& name) const;
  float get_float(const std::string& name, float dflt) const;
  std::string get_string(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> dflt) const;
  std::vector<float> get_floats(const std::string& name) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> dflt) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  const Tensor& get_tensor(const std::string& name) const;

 private:
  template <typename T>
  const T& get(const std::string& name, const char* type_name) const;
  std::map<std::string, AttrValue> map_;
};

/// Short text form of an attribute value for printing ("3", "[1, 1]", "'nearest'", "<tensor ...>").
std::string attr_str(const AttrValue& v);

}  // namespace yoloc
