/* host/cli/line_input.h — lines from standard input that Ctrl-C can interrupt.
 *
 * An interactive command waits at its prompt for the user's next line. A
 * blocking read there would be restarted after SIGINT (the handler is
 * installed with SA_RESTART so output never fails half-way) and Ctrl-C would
 * seem to do nothing until Enter. This reader waits with
 * host_interrupt_wait_input() first, so Ctrl-C at the prompt is seen at once,
 * and reads the file descriptor itself: stdio's buffer would hide lines that
 * already arrived from poll().
 *
 * Not thread-safe; one reader per descriptor, and nothing else may read it.
 */
#ifndef GUFO_HOST_LINE_INPUT_H
#define GUFO_HOST_LINE_INPUT_H

#include <stdbool.h>
#include <stddef.h>

/** A line reader over one file descriptor. Zero-initialise, set `fd`; free with host_line_input_free(). */
typedef struct host_line_input {
    int fd;
    char *buf;          /* bytes read but not yet returned, from `start` to `len` */
    size_t start, len, cap;
    bool at_end;        /* read() returned 0 */
} host_line_input;

typedef enum host_line_status {
    HOST_LINE_OK,          /* *line is the next line, without its '\n' (and '\r') */
    HOST_LINE_END,         /* end of input, nothing left */
    HOST_LINE_INTERRUPTED, /* Ctrl-C while waiting */
    HOST_LINE_FAILED       /* read or poll failed (errno), or out of memory (ENOMEM) */
} host_line_status;

/**
 * Returns the next line. A last line without '\n' is returned at end of
 * input. *line points into the reader's buffer and stays valid until the next
 * call; it is NUL-terminated and may be modified in place.
 */
host_line_status host_line_input_read(host_line_input *in, char **line, size_t *len);

/** Frees the buffer; the descriptor stays open. */
void host_line_input_free(host_line_input *in);

#endif /* GUFO_HOST_LINE_INPUT_H */
