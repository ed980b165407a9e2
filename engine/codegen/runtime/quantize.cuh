// fusescope runtime: nvfp4 block quantization (BlockQuantizationOp), the 128x4 block-scale
// swizzle, and the output offsets of the grouped-matmul scale layout op
// (PreprocessGroupedMatmulInputSf). The math is engine/nvfp4.py's, step for step, in fp32.
#ifndef FS_RUNTIME_QUANTIZE_CUH
#define FS_RUNTIME_QUANTIZE_CUH

// Quantize one block of 16 contiguous values:
//   amax = max |x| (NaN propagates);  s = amax / 6 (* global_scale when given)
//   scale = e4m3(clamp(s, 2^-6, 448))
//   q_i = e2m1(clamp(x_i / (float(scale) [/ global_scale]), -6, 6))
// packed8[j] holds q_{2j} in its low nibble and q_{2j+1} in its high nibble.
FS_DEVICE void nvfp4QuantizeBlock(const float* x16, uint8_t* packed8, __e4m3& scale,
                                  float global_scale, bool has_global_scale) {
  float amax = 0.0f;
  for (int i = 0; i < 16; ++i) {
    amax = fsMax(amax, fabsf(x16[i]));
  }
  float s = amax / 6.0f;
  if (has_global_scale) {
    s = s * global_scale;
  }
  s = fsClamp(s, 0.015625f, 448.0f);
  scale = __float2e4m3(s);
  float denom = __e4m32float(scale);
  if (has_global_scale) {
    denom = denom / global_scale;
  }
  for (int j = 0; j < 8; ++j) {
    const float a = fsClamp(x16[2 * j] / denom, -6.0f, 6.0f);
    const float b = fsClamp(x16[2 * j + 1] / denom, -6.0f, 6.0f);
    packed8[j] = static_cast<uint8_t>(fsToE2m1Code(a) | (fsToE2m1Code(b) << 4));
  }
}

// Flat offset of block scale (r, c) of an [m, cols] scale matrix in the 128x4 swizzle:
// allocation [m/128, k/4, 32, 4, 4] of the split [m/128, 4, 32, k/4, 4], k = cols rounded
// up to a multiple of 4.
FS_DEVICE nvfuser_index_t nvfp4SwizzledScaleOffset(nvfuser_index_t r, nvfuser_index_t c,
                                                   nvfuser_index_t cols) {
  const nvfuser_index_t k4 = (cols + 3) / 4;
  return (r / 128) * k4 * 512 + (c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

// The layout op: element (row, col) of the [M, K] input scales goes to this flat index of
// the [M + G*127, Kp] output buffer (Kp = ceil(K/4)*4). Row `row` belongs to the last group g
// whose input offset is <= row (groups run to the next group's start; an empty group's start
// equals the next one's, so it is skipped), lr = row - input_offsets[g]:
//   output_offsets[g]*Kp + (lr/128)*128*Kp + (col/4)*512 + (lr%32)*16 + ((lr%128)/32)*4 + col%4
// Rows before the first group's start (a malformed offsets list) return -1.
FS_DEVICE nvfuser_index_t preprocessGroupedMatmulInputSfOffset(nvfuser_index_t row,
                                                               nvfuser_index_t col,
                                                               nvfuser_index_t K, int num_groups,
                                                               const int* input_offsets,
                                                               const int* output_offsets) {
  int g = -1;
  for (int i = 0; i < num_groups; ++i) {
    if (input_offsets[i] <= row) {
      g = i;
    }
  }
  if (g < 0) {
    return -1;
  }
  const nvfuser_index_t kp = (K + 3) / 4 * 4;
  const nvfuser_index_t lr = row - input_offsets[g];
  return static_cast<nvfuser_index_t>(output_offsets[g]) * kp + (lr / 128) * 128 * kp +
         (col / 4) * 512 + (lr % 32) * 16 + ((lr % 128) / 32) * 4 + col % 4;
}

#endif  // FS_RUNTIME_QUANTIZE_CUH
