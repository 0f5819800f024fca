YC_KERNEL void YC_LAUNCH_BOUNDS({threads}) {sym}({params}) {{
  YC_KERNEL_ENTRY();
{casts}  const {ix} first =
      static_cast<{ix}>(blockIdx.x) * {threads} + static_cast<{ix}>(threadIdx.x);
#pragma unroll
  for (int item = 0; item < {items}; ++item) {{
    const {ix} e = first + item * {stride};
    if (e >= {work}) return;
{body}  }}
}}
