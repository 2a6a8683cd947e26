/* runtime/qmatmul.c — CPU reference products of quantized weights and float activations.
 *
 * Rows are dequantized in chunks of CHUNK elements into a stack buffer
 * (16 KiB): CHUNK is a multiple of every block size (32 and 256), so a chunk
 * boundary is always a block boundary, and no row length needs a heap buffer.
 * gufo_x_qmatmul() dequantizes each chunk once and applies it to every
 * activation vector before moving on, so weights are decoded once per call
 * however many vectors there are.
 *
 * F32 weights are used in place. Dot products use eight independent
 * accumulators so the compiler can vectorise without -ffast-math.
 */
#include <gufo/ext/experimental/qmatmul.h>

#define CHUNK 4096

static float dot(const float *a, const float *b, uint64_t n)
{
    float acc[8] = {0};
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* Validates shapes shared by both entry points; returns the bytes of one row. */
static gufo_status row_bytes(gufo_tensor_type type, const void *weights, uint64_t cols, uint64_t row_begin,
                             uint64_t row_end, const float *x, const float *y, uint64_t *bytes)
{
    if (!weights || !x || !y || row_begin > row_end) return GUFO_E_INVALID_ARGUMENT;
    *bytes = gufo_tensor_row_size(type, cols);
    if (*bytes == 0) return GUFO_E_INVALID_ARGUMENT; /* unknown type, or cols not a block multiple */
    return GUFO_OK;
}

/* Points `*out` at `n` floats of the row's elements [first, first + n): the
 * weights themselves for F32, else `buf` filled by dequantization. */
static gufo_status chunk_of_row(gufo_tensor_type type, const uint8_t *row, uint64_t first, uint64_t n, float *buf,
                                const float **out)
{
    if (type == GUFO_TENSOR_F32) {
        *out = (const float *)row + first;
        return GUFO_OK;
    }
    *out = buf;
    return gufo_tensor_dequantize(type, row + gufo_tensor_row_size(type, first), buf, n);
}

GUFO_EXT_API gufo_status gufo_x_qmatvec(gufo_tensor_type type, const void *weights, uint64_t cols, uint64_t row_begin,
                                        uint64_t row_end, const float *x, float *y)
{
    uint64_t bytes;
    gufo_status st = row_bytes(type, weights, cols, row_begin, row_end, x, y, &bytes);
    if (st != GUFO_OK) return st;

    float buf[CHUNK];
    for (uint64_t r = row_begin; r < row_end; r++) {
        const uint8_t *row = (const uint8_t *)weights + r * bytes;
        float sum = 0.0f;
        for (uint64_t first = 0; first < cols; first += CHUNK) {
            uint64_t n = cols - first < CHUNK ? cols - first : CHUNK;
            const float *w;
            if ((st = chunk_of_row(type, row, first, n, buf, &w)) != GUFO_OK) return st;
            sum += dot(w, x + first, n);
        }
        y[r] = sum;
    }
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_x_qmatmul(gufo_tensor_type type, const void *weights, uint64_t cols, uint64_t rows,
                                        uint64_t row_begin, uint64_t row_end, const float *x, uint64_t n_vectors,
                                        float *y)
{
    uint64_t bytes;
    gufo_status st = row_bytes(type, weights, cols, row_begin, row_end, x, y, &bytes);
    if (st != GUFO_OK) return st;
    if (row_end > rows) return GUFO_E_INVALID_ARGUMENT;

    float buf[CHUNK];
    for (uint64_t r = row_begin; r < row_end; r++) {
        const uint8_t *row = (const uint8_t *)weights + r * bytes;
        for (uint64_t v = 0; v < n_vectors; v++) y[v * rows + r] = 0.0f;
        for (uint64_t first = 0; first < cols; first += CHUNK) {
            uint64_t n = cols - first < CHUNK ? cols - first : CHUNK;
            const float *w;
            if ((st = chunk_of_row(type, row, first, n, buf, &w)) != GUFO_OK) return st;
            for (uint64_t v = 0; v < n_vectors; v++) y[v * rows + r] += dot(w, x + v * cols + first, n);
        }
    }
    return GUFO_OK;
}
