/* tests/runtime/test_qmatmul.c — quantized products against dequantize + a naive dot.
 *
 * The reference dequantizes each whole row with gufo_tensor_dequantize and
 * sums in double. The runtime sums in float with partial accumulators, so the
 * tolerance is relative to sum |w * x|: 1e-5 of it covers float rounding over
 * rows of ~10k elements with a wide margin, while any indexing or chunking
 * bug (a wrong block, a skipped chunk) is off by far more.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/ext/experimental/qmatmul.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/testing.h>

/* Crosses the runtime's 4096-element chunk boundary twice, and is a multiple of 256. */
#define COLS (2 * 4096 + 512)
#define ROWS 7
#define VECS 3

static float frand(unsigned *seed)
{
    return (float)(rand_r(seed) % 20001 - 10000) / 10000.0f;
}

typedef struct fixture {
    gufo_tensor_type type;
    uint64_t row_bytes;
    unsigned char *weights; /* ROWS quantized rows */
    float *x;               /* VECS x COLS */
    double ref[VECS][ROWS];
    double scale[VECS][ROWS]; /* sum |w * x|, for the tolerance */
} fixture;

static bool make_fixture(fixture *f, gufo_tensor_type type)
{
    unsigned seed = 1000u + (unsigned)type;
    f->type = type;
    f->row_bytes = gufo_tensor_row_size(type, COLS);
    GUFO_CHECK(f->row_bytes > 0);
    f->weights = malloc(ROWS * f->row_bytes);
    f->x = malloc(VECS * COLS * sizeof *f->x);
    float *row = malloc(COLS * sizeof *row), *deq = malloc(COLS * sizeof *deq);
    for (int v = 0; v < VECS * COLS; v++) f->x[v] = frand(&seed);
    bool ok = true;
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) row[c] = frand(&seed) * (float)(r + 1);
        unsigned char *q = f->weights + r * f->row_bytes;
        ok = ok && gufo_tensor_quantize(type, row, q, COLS) == GUFO_OK;
        ok = ok && gufo_tensor_dequantize(type, q, deq, COLS) == GUFO_OK;
        for (int v = 0; v < VECS; v++) {
            double sum = 0, mag = 0;
            for (int c = 0; c < COLS; c++) {
                sum += (double)deq[c] * f->x[v * COLS + c];
                mag += fabs((double)deq[c] * f->x[v * COLS + c]);
            }
            f->ref[v][r] = sum;
            f->scale[v][r] = mag;
        }
    }
    free(row);
    free(deq);
    return ok;
}

static void free_fixture(fixture *f)
{
    free(f->weights);
    free(f->x);
}

static bool close_to(float got, double want, double scale)
{
    return fabs((double)got - want) <= 1e-5 * scale + 1e-6;
}

static void test_type(gufo_tensor_type type)
{
    fixture f;
    if (!make_fixture(&f, type)) {
        fprintf(stderr, "cannot build a %s fixture\n", gufo_tensor_type_name(type));
        GUFO_CHECK(false);
        free_fixture(&f);
        return;
    }

    /* qmatvec over a sub-range writes exactly those rows. */
    float y[ROWS];
    for (int r = 0; r < ROWS; r++) y[r] = 12345.0f;
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(type, f.weights, COLS, 2, 6, f.x, y), GUFO_OK);
    for (int r = 0; r < ROWS; r++) {
        if (r < 2 || r >= 6) {
            GUFO_CHECK(y[r] == 12345.0f);
        } else if (!close_to(y[r], f.ref[0][r], f.scale[0][r])) {
            fprintf(stderr, "%s row %d: %g vs %g\n", gufo_tensor_type_name(type), r, (double)y[r], f.ref[0][r]);
            GUFO_CHECK(false);
        }
    }

    /* qmatmul: every vector, full range, Y laid out vectors x rows. */
    float out[VECS * ROWS];
    GUFO_CHECK_EQ_INT(gufo_x_qmatmul(type, f.weights, COLS, ROWS, 0, ROWS, f.x, VECS, out), GUFO_OK);
    for (int v = 0; v < VECS; v++)
        for (int r = 0; r < ROWS; r++)
            if (!close_to(out[v * ROWS + r], f.ref[v][r], f.scale[v][r])) {
                fprintf(stderr, "%s vec %d row %d: %g vs %g\n", gufo_tensor_type_name(type), v, r,
                        (double)out[v * ROWS + r], f.ref[v][r]);
                GUFO_CHECK(false);
            }

    /* And both agree with each other for a single vector. */
    float one[ROWS];
    GUFO_CHECK_EQ_INT(gufo_x_qmatmul(type, f.weights, COLS, ROWS, 0, ROWS, f.x, 1, one), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(type, f.weights, COLS, 0, ROWS, f.x, y), GUFO_OK);
    for (int r = 0; r < ROWS; r++) GUFO_CHECK(one[r] == y[r]);
    free_fixture(&f);
}

static void test_errors(void)
{
    float x[256] = {0}, y[4];
    unsigned char w[4096] = {0};
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(GUFO_TENSOR_Q8_0, w, 33, 0, 1, x, y),
                 GUFO_E_INVALID_ARGUMENT); /* not a block multiple */
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(GUFO_TENSOR_Q8_0, NULL, 32, 0, 1, x, y), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(GUFO_TENSOR_Q8_0, w, 32, 2, 1, x, y), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(GUFO_TENSOR_Q2_K, w, 256, 0, 1, x, y), GUFO_E_UNSUPPORTED);
    GUFO_CHECK_EQ_INT(gufo_x_qmatmul(GUFO_TENSOR_Q8_0, w, 32, 2, 0, 3, x, 1, y),
                 GUFO_E_INVALID_ARGUMENT);                                      /* row_end > rows */
    GUFO_CHECK_EQ_INT(gufo_x_qmatvec(GUFO_TENSOR_Q8_0, w, 32, 1, 1, x, y), GUFO_OK); /* empty range */
}

int main(void)
{
    static const gufo_tensor_type types[] = {GUFO_TENSOR_F32,  GUFO_TENSOR_F16,  GUFO_TENSOR_BF16, GUFO_TENSOR_Q4_0,
                                             GUFO_TENSOR_Q8_0, GUFO_TENSOR_Q4_K, GUFO_TENSOR_Q5_K, GUFO_TENSOR_Q6_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) test_type(types[i]);
    test_errors();
    return GUFO_CHECK_DONE();
}
