#include "passes/fake_quant_lowering.h"

#include "ir/op_registry.h"
#include "ir/shape_inference.h"

namespace yoloc {

namespace {

Value* elementwise(Graph& g, const std::string& op, std::vector<Value*> inputs,
                   const std::string& name) {
  Node* n = g.add_node(op, std::move(inputs), 1, {}, name);
  infer_node(*n);
  return n->outputs[0];
}

/// A per-tensor int8 pair: QuantizeLinear(x, s, zp) read by DequantizeLinear(q, s, zp).
bool is_int8_pair(const Node* dq, const Node* q) {
  if (!q || q->op != "QuantizeLinear" || q->outputs[0]->type.dtype != DType::kInt8) return false;
  for (size_t i = 1; i < 3; ++i) {
    const Value* a = q->input(i);
    const Value* b = dq->input(i);
    if (!a || !b || !a->is_constant() || a->data.numel() != 1 || b->data.numel() != 1 ||
        !b->is_constant() || a->data.to_doubles() != b->data.to_doubles())
      return false;
  }
  return true;
}

}  // namespace

bool FakeQuantLowering::run(Graph& g, PassContext&) {
  bool changed = false;
  for (Node* dq : g.nodes()) {
    if (dq->op != "DequantizeLinear") continue;
    Value* in = dq->inputs[0];
    if (in->is_constant() && dq->input(1)->is_constant() &&
        (!dq->input(2) || dq->input(2)->is_constant())) {
      std::vector<Tensor> args;
      for (const Value* v : dq->inputs) args.push_back(v ? v->data : Tensor());
      g.replace_with_constants(dq, dq->def->reference(*dq, args));
      changed = true;
      continue;
    }
    Node* q = in->producer;
    if (!is_int8_pair(dq, q)) continue;
    const std::string base = q->outputs[0]->name;
    Value* s = q->inputs[1];
    const double zp = q->inputs[2]->data.to_doubles()[0];
    Value* v = elementwise(g, "Div", {q->inputs[0], s}, base + "_fq_div");
    v = elementwise(g, "Round", {v}, base + "_fq_round");
    Value* zpf = g.add_constant(base + "_fq_zp", Tensor::scalar<float>(static_cast<float>(zp)));
    if (zp != 0) v = elementwise(g, "Add", {v, zpf}, base + "_fq_add_zp");
    v = elementwise(g, "Clip",
                    {v, g.add_constant(base + "_fq_lo", Tensor::scalar<float>(-128.0f)),
                     g.add_constant(base + "_fq_hi", Tensor::scalar<float>(127.0f))},
                    base + "_fq_clip");
    if (zp != 0) v = elementwise(g, "Sub", {v, zpf}, base + "_fq_sub_zp");
    v = elementwise(g, "Mul", {v, s}, base + "_fq_mul");
    g.replace_all_uses(dq->outputs[0], v);
    changed = true;
  }
  if (changed) {
    g.topo_sort();
    g.remove_dead();
  }
  return changed;
}

}  // namespace yoloc
