/* gpu_dequant.cuh — GGUF blocks to floats, eight elements per thread.
 *
 * A warp walks a row in groups of 256 elements (one K-quant super-block,
 * eight Q8_0 blocks, or 256 plain values). In group g, lane l owns eight
 * elements:
 *   float types: g*256 + i*32 + l  (i = 0..7; consecutive lanes read
 *                consecutive values, so loads coalesce), and
 *   block types: g*256 + l*8 + i   (eight neighbours share one scale).
 * qg_element() says which. Each value is rounded exactly as the runtime's CPU
 * dequantizer rounds it (explicit _rn operations: no contraction into a
 * fused multiply-add), so a dequantized weight is bit-equal on both sides.
 */
#ifndef QWEN_GPU_DEQUANT_CUH
#define QWEN_GPU_DEQUANT_CUH

#include "gpu_common.cuh"

template <int TYPE>
struct qg_layout {
    static constexpr bool strided = TYPE == QWEN_GPU_F32 || TYPE == QWEN_GPU_F16 || TYPE == QWEN_GPU_BF16;
};

/** Index within the row of element i (0..7) of lane `lane` in group g. */
template <int TYPE>
__device__ __forceinline__ uint32_t qg_element(uint32_t g, int lane, int i)
{
    return qg_layout<TYPE>::strided ? g * 256u + (uint32_t)i * 32u + (uint32_t)lane
                                    : g * 256u + (uint32_t)lane * 8u + (uint32_t)i;
}

__device__ __forceinline__ float qg_half(const uint8_t *p)
{
    /* Block scales sit at 2-byte alignment. */
    unsigned short bits = (unsigned short)(p[0] | (p[1] << 8));
    return __half2float(*reinterpret_cast<const __half *>(&bits));
}

__device__ __forceinline__ float qg_bf16(unsigned short bits)
{
    return __uint_as_float((unsigned int)bits << 16);
}

/**
 * Decodes lane `lane`'s eight elements of group g of `row` (which has `cols`
 * elements) into w[]; elements at or past `cols` read as 0.
 */
template <int TYPE>
__device__ __forceinline__ void qg_dequant8(const uint8_t *row, uint32_t cols, uint32_t g, int lane, float w[8])
{
    if (TYPE == QWEN_GPU_F32 || TYPE == QWEN_GPU_F16 || TYPE == QWEN_GPU_BF16) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t e = qg_element<TYPE>(g, lane, i);
            float v = 0.0f;
            if (e < cols) {
                if (TYPE == QWEN_GPU_F32)
                    v = reinterpret_cast<const float *>(row)[e];
                else if (TYPE == QWEN_GPU_F16)
                    v = __half2float(reinterpret_cast<const __half *>(row)[e]);
                else
                    v = qg_bf16(reinterpret_cast<const unsigned short *>(row)[e]);
            }
            w[i] = v;
        }
    } else if (TYPE == QWEN_GPU_Q8_0) {
        const uint32_t first = g * 256u + (uint32_t)lane * 8u;
        if (first >= cols) {
#pragma unroll
            for (int i = 0; i < 8; i++) w[i] = 0.0f;
            return;
        }
        const uint8_t *b = row + (size_t)(first / 32u) * 34u;
        const float d = qg_half(b);
        const int8_t *q = reinterpret_cast<const int8_t *>(b + 2) + (first % 32u);
#pragma unroll
        for (int i = 0; i < 8; i++) w[i] = __fmul_rn(d, (float)q[i]);
    } else if (TYPE == QWEN_GPU_Q4_K) {
        /* 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) pairs, 128 bytes of nibbles. */
        const uint8_t *b = row + (size_t)g * 144u;
        const float d = qg_half(b), dmin = qg_half(b + 2);
        const uint8_t *scales = b + 4;
        const int sub = lane / 4;          /* 32-element sub-block 0..7 */
        const int pair = sub / 2, high = sub & 1;
        int sc, m;
        if (sub < 4) {
            sc = scales[sub] & 63;
            m = scales[sub + 4] & 63;
        } else {
            sc = (scales[sub + 4] & 0x0f) | ((scales[sub - 4] >> 6) << 4);
            m = (scales[sub + 4] >> 4) | ((scales[sub] >> 6) << 4);
        }
        const float scale = __fmul_rn(d, (float)sc), offset = __fmul_rn(dmin, (float)m);
        const uint8_t *qs = b + 16 + pair * 32 + (lane % 4) * 8;
        const uint2 packed = *reinterpret_cast<const uint2 *>(qs); /* 8-byte aligned: 144 = 16 * 9 */
        const uint8_t *bytes = reinterpret_cast<const uint8_t *>(&packed);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int q = high ? (bytes[i] >> 4) : (bytes[i] & 0x0f);
            w[i] = __fsub_rn(__fmul_rn(scale, (float)q), offset);
        }
    } else { /* QWEN_GPU_Q6_K: ql[128], qh[64], int8 scales[16], f16 d — 210 bytes */
        const uint8_t *b = row + (size_t)g * 210u;
        const float d = qg_half(b + 208);
        const int e0 = lane * 8;
        const int half = e0 / 128, r = e0 % 128, k = r / 32, l0 = r % 32;
        const uint8_t *ql = b + 64 * half + 32 * (k & 1) + l0;
        const uint8_t *qh = b + 128 + 32 * half + l0;
        const int ql_shift = k >= 2 ? 4 : 0, qh_shift = 2 * k;
        const float scale = __fmul_rn(d, (float)reinterpret_cast<const int8_t *>(b + 192)[8 * half + 2 * k + l0 / 16]);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int q = ((ql[i] >> ql_shift) & 0x0f) | (((qh[i] >> qh_shift) & 3) << 4);
            w[i] = __fmul_rn(scale, (float)(q - 32));
        }
    }
}

#endif /* QWEN_GPU_DEQUANT_CUH */
