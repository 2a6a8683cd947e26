/* slurp.h — the embedding_gemma2 tests' one file reader. */
#ifndef EG2_TEST_SLURP_H
#define EG2_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/* The whole file at `path`, NUL-terminated (malloc'd), its length in `*len`
 * when `len` is not NULL; NULL when it cannot be read. */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (data) {
        data[n] = 0;
        if (len)
            *len = (size_t)n;
    }
    return data;
}

#endif /* EG2_TEST_SLURP_H */
