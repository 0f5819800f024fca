#pragma once
/// The code generator of the generic CUDA template (generic_template.h), internal to it: an
/// Emitter turns a GenericTask's group into kernels. Its members are defined by concern: the
/// analysis of the group (generic_analysis.cpp, with the helpers declared here), the statements
/// and element expressions (generic_codegen.cpp), the index arithmetic and loops of the ONNX
/// operators (generic_ops.cpp), and the launches (Emitter::run, generic_template.cpp).
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/generic_template.h"

namespace yoloc::codegen::cuda::generic_detail {

using cpu::dense_strides;

inline constexpr const char* kLowest = "-3.402823466e+38f";

bool is_alias(const std::string& op);

inline bool is_int64(const Value* v) { return v && v->type.dtype == DType::kInt64; }

// The type of a value in the kernels: int64 values stay integers (indices and their arithmetic),
// the others are computed in fp32.
inline const char* ctype(const Value* v) { return is_int64(v) ? "yc_i64" : "float"; }

// Whether n may read int64 data: index arithmetic and ops that move or select elements
// (elementwise ones only in the forms cpu::elementwise_expr takes).
bool reads_int64(const Node& n);

int64_t norm_axis(int64_t axis, size_t rank);

std::optional<Shape> static_shape(const Value* v);

// The inputs of n read as tensor data (the others are shapes, bounds, scales read at compile
// time).
std::vector<size_t> data_slots(const Node& n);

bool is_loop_op(const std::string& op);

// A constant read as data that is baked into the code as a literal (one element).
inline bool baked_scalar(const Value* v) { return v->is_constant() && v->data.numel() == 1; }

std::string float_literal(double v);

std::string int_literal(int64_t v);

// A baked scalar constant as a literal of its kernel type.
std::string scalar_literal(const Value* v);

// A 2-D pooling window over a 4-D input.
struct Window {
  const Value* x = nullptr;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

std::optional<Window> pool_window(const Node& n);

// A MaxPool whose output has its input's size at stride 1 (pads summing to kernel - 1): a chain
// of them is one MaxPool whose window is the sum of theirs.
bool same_size_max_pool(const Node& n);

// Describes an attribute value for the workload key.
std::string attr_text(const AttrValue& v);

std::string shape_str(const Value* v);

std::string operand_str(const CudaOperand& o);

// What one launch computes: a value, per element or (Softmax) per row.
struct Root {
  const Value* v = nullptr;
  int level = 0;
  int64_t work = 0;  ///< elements, or rows of a Softmax
  /// An input of a view Concat that leaves the group: written into output `dest` from element
  /// `base` on (instead of v's own operands).
  int dest = -1;
  int64_t base = 0;
};

// Generates the kernels of a task; fail() records the first unsupported thing.
class Emitter {
 public:
  explicit Emitter(const GenericTask& t) : t_(t) {}

  std::optional<GenericKernels> run(int64_t threads, int64_t items, const std::string& prefix);

  const std::string& why() const { return why_; }

 private:
  using Idx = std::vector<std::string>;

  bool fail(const std::string& what);

  // --- analysis ------------------------------------------------------------------------------

  bool analyse();

  bool add_root(const Value* v, int dest, int64_t base);

  std::vector<const Node*> users(const Value* v) const;

  const Node* producer(const Value* v) const;

  // The MaxPool chain of n composed while its links are same-size pools made in the group and
  // not materialised: the input of the first pool of the chain.
  const Value* pool_base(const Node& n) const;

  // Whether computing v inline runs a loop (a loop node not materialised on the way).
  bool loopy(const Value* v) const;

  // The materialised values that computing root v reads.
  std::set<const Value*> reads_of(const Value* v) const;

  // The dims a Softmax normalises over: [axis, second) with their element count.
  std::optional<std::pair<size_t, int64_t>> softmax_cols(const Node& n) const;

  // A TopK's K (constant, at most the size of its axis) with int64 indices; nullopt otherwise.
  std::optional<int64_t> topk_k(const Node& n) const;

  // --- code ----------------------------------------------------------------------------------

  const char* ix() const { return wide_ ? "yc_i64" : "int"; }

  void line(const std::string& s) { code_ += std::string(indent_ * 2, ' ') + s + "\n"; }
  std::string fresh(const char* stem) { return fmt::format("{}{}", stem, next_++); }

  void open(const std::string& head);
  void close();

  static std::string offset(const Idx& idx, const std::vector<int64_t>& strides);

  // Decomposes the work index `r` over the dims of `shape` listed in `order` (outermost first)
  // into index variables; the others are 0.
  Idx decompose(const std::string& r, const Shape& shape, const std::vector<size_t>& order);

  // Where the current root writes v, when it writes it to an operand: the output, its strides
  // and the first element (output -1 when v goes to scratch only).
  std::tuple<int, const std::vector<int64_t>*, int64_t> destination(const Value* v) const;

  // The dims of a root's value from outermost to innermost in what it writes: by decreasing
  // stride of its output operand (ties in logical order), logical order for scratch only.
  std::vector<size_t> walk_order(const Value* v) const;

  void store(const Value* v, const Idx& idx, const std::string& val);

  // v's element idx in scratch (dense, logical order).
  std::string scratch_at(const Value* v, const Idx& idx) const;

  bool emit_root(const Root& r, int64_t start);

  // One row of a Softmax: max, sum of exponentials, then the normalised values.
  bool emit_softmax(const Node& n, const std::string& e);

  // One element of a TopK's row: its rank is the count of the row's elements ordered before it
  // (the reference executor's order: NaN first when largest, last otherwise, then the values,
  // ties to the lower index: a strict total order, so the ranks are distinct); the element goes
  // to its rank's place when that is under K. The count stops at K: most elements are out soon.
  bool emit_topk(const Node& n, const std::string& e);

  // The name of a variable holding v at idx; emits the statements that compute it.
  std::string at(const Value* v, const Idx& idx);

  // A new variable of v's kernel type set to expr.
  std::string let(const std::string& expr, const Value* v = nullptr);

  std::string compute(const Value* v, const Idx& idx);

  std::string elementwise(const Node& n, const Idx& idx);

  // Reshape-like: dims grouped into runs of equal element count, each run re-indexed through
  // its local flat index.
  // --- operators -------------------------------------------------------------------------------

  Idx reshape_index(const Node& n, const Idx& idx);

  std::string transpose(const Node& n, const Idx& idx);

  std::optional<std::vector<int64_t>> ints(const Node& n, size_t i);

  std::string slice(const Node& n, const Idx& idx);

  std::string split(const Node& n, const Value* v, const Idx& idx);

  std::string concat(const Node& n, const Idx& idx);

  // An index variable: the int64 value ival clamped into a dim of `dim` (yc_index).
  std::string index_var(const std::string& ival, int64_t dim);

  // Gather: the data's dims before the axis, then the indices' dims, then the data's after it.
  std::string gather(const Node& n, const Idx& idx);

  // GatherElements: the element at the output's own position but along the axis, where its
  // index says.
  std::string gather_elements(const Node& n, const Idx& idx);

  std::string tile(const Node& n, const Idx& idx);

  // ReduceMax / ReduceMin over constant axes: a loop over the reduced dims from -inf / +inf (the
  // int64 extremes), a NaN propagating as in the reference executor.
  std::string reduce_extremum(const Node& n, const Idx& idx);

  std::string resize(const Node& n, const Idx& idx);

  std::string conv(const Node& n, const Idx& idx);

  // Opens the loops over a 2-D window at output (oh, ow) of an (out_h, out_w) output, and the
  // bounds test of the input position where it can fail; returns {ih, iw, r, s}. close_window
  // closes them.
  Idx window_loops(const std::string& oh, const std::string& ow, int64_t out_h, int64_t out_w,
                   int64_t h, int64_t w, const Window& win, int64_t ph, int64_t pw);

  void close_window();

  std::string pool(const Node& n, const Idx& idx);

  std::string matmul(const Node& n, const Idx& idx);

  std::string kernel_source(const std::string& sym, int64_t threads, int64_t items, int64_t blocks,
                            int64_t work, const std::string& body) const;

  const GenericTask& t_;
  std::string why_;
  std::map<const Value*, size_t> input_, constant_, output_;
  std::map<const Value*, const Node*> producer_;
  std::set<const Value*> forced_;  ///< materialised in scratch
  std::map<const Value*, int64_t> scratch_base_;
  std::map<const Value*, int> level_;
  std::vector<Root> roots_;
  int max_level_ = 0;
  int64_t scratch_floats_ = 0;
  bool wide_ = false;  ///< 64-bit index arithmetic
  bool int64_scratch_ = false;

  std::string code_;
  int indent_ = 0;
  int next_ = 0;
  const Root* root_ = nullptr;
  std::vector<std::map<std::string, std::string>> memo_;
  std::vector<int> window_opened_;
};

}  // namespace yoloc::codegen::cuda::generic_detail
