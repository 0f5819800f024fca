#pragma once
/// The body of the CPU detect-tail kernel (tail_template.h): the tail's nodes emitted one by one
/// as plain C++ loops over the group's buffers, and the small helpers the template shares with
/// it (axes, int64 values, constants read at compile time).
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/tail_template.h"

namespace yoloc::codegen::cpu {

namespace tail {

/// A possibly negative axis of a rank-`rank` tensor, made non-negative.
int64_t norm_axis(int64_t axis, size_t rank);
/// Whether v is an int64 value.
bool is_int64(const Value* v);
/// The static shape of a value the tail holds: float32, float16 (raw storage) or int64.
std::optional<Shape> static_tail_shape(const Value* v);
/// The integer elements of a constant input, read at compile time; nullopt when unknown.
std::optional<std::vector<int64_t>> known_ints(const Value* v);

}  // namespace tail

/// The statements of the tail kernel of `t` with every innermost loop unrolled `unroll` times;
/// nullopt when one of its nodes is not covered (the template then does not match).
std::optional<std::string> tail_kernel_body(const TailTask& t, int64_t unroll);

}  // namespace yoloc::codegen::cpu
