#pragma once
/// Helpers shared by the CPU kernel templates: text substitution, the operands of a fused group,
/// the C++ expression of an elementwise IR op, and a loop-nest emitter over static shapes.
///
/// The IR-driven templates (pool, resize, elementwise, tail) all emit one function of the form
///   extern "C" void symbol(const float* const* in, float* const* out, int64_t begin,
///                          int64_t end);
/// computing work items [begin, end) (disjoint items write disjoint outputs), where `in` and
/// `out` follow the order of the template's task (for a group: GroupIO order; constants are
/// inputs too, passed as plain row-major float32 arrays the compiler stores with the weights).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "yoloc/tensor.h"
#include "ir/graph.h"

namespace yoloc::codegen::cpu {

int64_t ceil_div(int64_t a, int64_t b);
/// Replaces every occurrence of `from` in s.
void replace_all(std::string& s, const std::string& from, const std::string& to);
/// True for a non-empty C identifier.
bool is_c_identifier(const std::string& s);
/// The static shape of a float32 value, or nullopt (unknown dims, other dtype, null).
std::optional<Shape> static_f32_shape(const Value* v);
/// The static shape of a float32 or float16 value (a float16 activation is raw 16-bit storage
/// the kernel converts on load and store), or nullopt.
std::optional<Shape> static_float_shape(const Value* v);
/// True for a float16 value.
bool is_half(const Value* v);
/// Row-major strides of `in` aligned to the dims of `out` by numpy broadcasting (0 on broadcast
/// and missing leading dims); nullopt when `in` does not broadcast to `out`.
std::optional<std::vector<int64_t>> broadcast_strides(const Shape& in, const Shape& out);
/// Row-major strides of a shape.
std::vector<int64_t> dense_strides(const Shape& s);

/// The nodes of a group (graph order), what it reads from outside (activations first, then
/// constants, each once in first-use order), and what it makes for outside (values read by
/// another group or graph outputs, in graph order).
struct GroupIO {
  std::vector<const Node*> nodes;
  std::vector<const Value*> inputs;
  std::vector<const Value*> outputs;
};
GroupIO group_io(const Graph& g, const FusedGroup& group);

/// False when v is written into a view Concat of several images: its images then lie apart in
/// the concat buffer, which a kernel writing v densely cannot address.
bool dense_output(const Graph& g, const Value* v);

/// The C++ float expression of elementwise node n applied to `args` (one expression per input,
/// in input order), or nullopt when the op (or its attributes) is not supported. Needs the
/// functions of kScalarPrelude. A Cast between float32 and float16 is taken (values are float
/// in the kernel: a Cast to float16 rounds; LoopOperand::half stores it). int64 nodes (every
/// operand int64; Casts between int64 and float32) get integer expressions (yc_idiv, yc_imod:
/// the reference executor's truncating division and divisor-signed remainder): only the tail
/// template and the CUDA generic template keep int64 values.
std::optional<std::string> elementwise_expr(const Node& n, const std::vector<std::string>& args);

/// Includes and scalar helpers (yc_sigmoid, yc_silu, yc_relu1, yc_h2f, yc_f2h, the int64 ones)
/// every IR-driven kernel starts with.
extern const std::string kScalarPrelude;

/// The int64 helpers of kScalarPrelude (yc_iadd, yc_isub, yc_imul, yc_idiv, yc_imod, yc_index,
/// yc_f2i64), for other preludes: they need `yc_i64` (a signed 64-bit type) and the function
/// qualifier `YC_IFN` defined first.
extern const char* const kInt64Helpers;

/// An array a loop nest reads or writes: `ptr` + base + sum(index_d * strides[d]).
struct LoopOperand {
  std::string ptr;
  int64_t base = 0;
  std::vector<int64_t> strides;  ///< one per loop dim
  bool half = false;  ///< float16 elements: converted to float on read, rounded on write
};

/// A loop nest over `dims`: the leading dims (all but the last two) are the work items from
/// `begin` to `end` (C++ expressions), the last two are plain loops (the innermost unrolled by
/// `unroll`). In the innermost body, `const auto xK = <reads[K]>;` for each read (typed by the
/// operand's pointer: float, int64_t; float16 storage is converted to float), then `body`
/// (statements that may use xK and must define the names in `values`), then
/// `<writes[K]> = values[K];`.
std::string emit_loop_nest(const Shape& dims, const std::vector<LoopOperand>& reads,
                           const std::vector<LoopOperand>& writes, const std::string& body,
                           const std::vector<std::string>& values, const std::string& begin,
                           const std::string& end, int64_t unroll);
/// The number of work items emit_loop_nest makes of `dims` (the product of all but the last
/// two; 1 for rank <= 2).
int64_t loop_items(const Shape& dims);

}  // namespace yoloc::codegen::cpu
