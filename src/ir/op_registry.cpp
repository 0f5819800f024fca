#include "ir/op_registry.h"

namespace yoloc {

const TensorType& InferContext::type(size_t i) const {
  static const TensorType kNone;
  const Value* v = node.input(i);
  return v ? v->type : kNone;
}

const Tensor* InferContext::value(size_t i) const {
  const Value* v = node.input(i);
  return v ? v->known() : nullptr;
}

std::optional<std::vector<SymElem>> InferContext::symbolic(size_t i) const {
  constexpr int64_t kMaxElements = 64;
  const Value* v = node.input(i);
  if (!v) return std::nullopt;
  if (const Tensor* t = v->known()) {
    if (!is_integer(t->dtype()) || t->rank() > 1 || t->numel() > kMaxElements) return std::nullopt;
    std::vector<SymElem> r;
    for (int64_t x : t->to_int64s()) r.push_back({x, {}});
    return r;
  }
  if (v->symbolic.empty()) return std::nullopt;
  return v->symbolic;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry r;
  return r;
}

bool OpRegistry::add(OpDef def) {
  YOLOC_CHECK(!ops_.count(def.name), "op '{}' registered twice", def.name);
  YOLOC_CHECK(def.infer && def.reference, "op '{}' needs infer and reference functions", def.name);
  ops_.emplace(def.name, std::move(def));
  return true;
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> r;
  for (const auto& [k, v] : ops_) r.push_back(k);
  return r;
}

}  // namespace yoloc
