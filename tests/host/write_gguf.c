/* tests/host/write_gguf.c — writes small GGUF files for the host's CLI tests.
 *
 *   gufo_host_write_gguf OUT.gguf ARCHITECTURE
 *
 * The file declares `general.architecture = ARCHITECTURE` and holds one tiny
 * F32 tensor, so it is a valid GGUF that a test can aim at `gufo prompt`
 * knowing (by picking a name no extension claims) that every provider will
 * decline it. An empty ARCHITECTURE ("") leaves the key out.
 */
#include <stdio.h>

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUT.gguf ARCHITECTURE\n", argv[0]);
        return 2;
    }
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    if (gufo_gguf_writer_create(&w) != GUFO_OK) {
        fprintf(stderr, "write_gguf: out of memory\n");
        return 1;
    }
    static const float weights[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    static const uint64_t dims[1] = {4};
    int rc = 0;
    if ((argv[2][0] && gufo_gguf_writer_set_string(w, "general.architecture", argv[2]) != GUFO_OK) ||
        gufo_gguf_writer_set_string(w, "general.name", "gufo host test fixture") != GUFO_OK ||
        gufo_gguf_writer_add_tensor(w, "fixture.weight", GUFO_TENSOR_F32, 1, dims, weights, NULL) != GUFO_OK) {
        fprintf(stderr, "write_gguf: building the file failed\n");
        rc = 1;
    } else if (gufo_gguf_writer_write(w, argv[1], &err) != GUFO_OK) {
        fprintf(stderr, "write_gguf: %s\n", err.message);
        rc = 1;
    }
    gufo_gguf_writer_destroy(w);
    return rc;
}
