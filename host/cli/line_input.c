/* host/cli/line_input.c — see cli/line_input.h. */
#include "cli/line_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/interrupt.h"

/* Makes room for `more` bytes after `len`, moving what is left of the buffer to its start first. */
static bool reserve(host_line_input *in, size_t more)
{
    if (in->start > 0) {
        memmove(in->buf, in->buf + in->start, in->len - in->start);
        in->len -= in->start;
        in->start = 0;
    }
    if (in->len + more <= in->cap)
        return true;
    size_t cap = in->cap ? in->cap : 4096;
    while (cap < in->len + more)
        cap *= 2;
    char *grown = realloc(in->buf, cap);
    if (!grown) {
        errno = ENOMEM;
        return false;
    }
    in->buf = grown;
    in->cap = cap;
    return true;
}

/* Hands out buf[start .. end) as a line, dropping a '\r' before the end. */
static host_line_status take(host_line_input *in, size_t end, size_t next, char **line, size_t *len)
{
    char *s = in->buf + in->start;
    size_t n = end - in->start;
    if (n > 0 && s[n - 1] == '\r')
        n--;
    s[n] = '\0';
    in->start = next;
    *line = s;
    *len = n;
    return HOST_LINE_OK;
}

host_line_status host_line_input_read(host_line_input *in, char **line, size_t *len)
{
    size_t searched = 0; /* bytes after `start` already searched for '\n' (reserve() may move them) */
    for (;;) {
        size_t pending = in->len - in->start;
        char *newline = pending > searched ? memchr(in->buf + in->start + searched, '\n', pending - searched) : NULL;
        if (newline) {
            size_t end = (size_t)(newline - in->buf);
            return take(in, end, end + 1, line, len);
        }
        searched = pending;
        if (in->at_end) {
            if (pending == 0)
                return HOST_LINE_END;
            /* The last line had no '\n': make room for its terminator. */
            if (!reserve(in, 1))
                return HOST_LINE_FAILED;
            return take(in, in->len, in->len, line, len);
        }
        switch (host_interrupt_wait_input(in->fd)) {
        case HOST_INPUT_INTERRUPTED:
            return HOST_LINE_INTERRUPTED;
        case HOST_INPUT_FAILED:
            return HOST_LINE_FAILED;
        case HOST_INPUT_READY:
            break;
        }
        if (!reserve(in, 4096))
            return HOST_LINE_FAILED;
        ssize_t got = read(in->fd, in->buf + in->len, in->cap - in->len);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return HOST_LINE_FAILED;
        }
        if (got == 0)
            in->at_end = true;
        in->len += (size_t)got;
    }
}

void host_line_input_free(host_line_input *in)
{
    free(in->buf);
    in->buf = NULL;
    in->start = in->len = in->cap = 0;
}
