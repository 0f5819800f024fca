#pragma once
/// Fused groups: the partition of a graph into kernels, made by the fusion pass. A group is one
/// kernel (an anchor op plus its epilogue, an elementwise chain, a fused block), or a view that
/// needs no kernel (Concat/Split/Reshape that only re-address memory).
#include <string>

namespace yoloc {

enum class GroupKind {
  kView,          ///< no kernel: the nodes only re-address memory (concat/split slices, reshape)
  kAnchor,        ///< conv / pool / matmul / resize + fused epilogue
  kElementwise,   ///< a chain of elementwise / injective ops
  kSppf,          ///< the SPPF block: chained max-pools writing into one concat
  kDetectTail,    ///< the detect head after the last convolutions: decode boxes + scores
  kOther,         ///< any other single op (softmax, reduction, gather...)
};

/// "view", "anchor", "elementwise", "sppf", "detect_tail", "other".
const char* group_kind_name(GroupKind k);

struct FusedGroup {
  int id = 0;
  GroupKind kind = GroupKind::kOther;
  int anchor = -1;   ///< Node::id of the anchor op, -1 if none
  std::string name;  ///< e.g. "Conv+SiLU+Add"

  bool is_kernel() const { return kind != GroupKind::kView; }
};

}  // namespace yoloc
