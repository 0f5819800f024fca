typedef @TO@ TO;
// Constants as enumerators: namespace-scope constexpr variables would each become a __device__
// global of the module.
enum : int { A = @A@, S = @S@, R = @R@ };
enum : yc_i64 { ON = @ON@, OC = @OC@, OA = @OA@ };
// The box unit of one anchor: x at its first DFL logit, channels sc apart; y at its output
// element of channel 0.
template <class TI>
YC_DEVICE void box_unit(const TI* __restrict__ x, yc_i64 sc, const float* __restrict__ table,
                        int a, TO* __restrict__ y) {
  float d[S];
#pragma unroll
  for (int s = 0; s < S; ++s) {
    float v[R];
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = yc_load(x + (s * R + r) * sc);
    float m = v[0];
#pragma unroll
    for (int r = 1; r < R; ++r) m = fmaxf(m, v[r]);
    float sum = 0.f, acc = 0.f;
@EXPECT@    d[s] = @DIV@ + @BIAS@;
  }
@DECODE@}
