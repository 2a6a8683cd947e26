/* host/run/report.c — see run/report.h. */
#include "run/report.h"

#include <stdarg.h>
#include <stdio.h>

void host_error(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fputs("gufo: ", stderr);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
}

const char *host_why(gufo_status status, const gufo_error *err)
{
    return err && err->status != GUFO_OK && err->message[0] ? err->message : gufo_status_str(status);
}

void host_usage_error(const char *command, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "gufo %s: ", command);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
}
