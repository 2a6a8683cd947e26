/* host/run/command_driver.c — running a provider's command driver (run/command_driver.h). */
#include "run/command_driver.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "run/report.h"

static void driver_write(void *userdata, const char *text, size_t len)
{
    FILE *out = userdata;
    fwrite(text, 1, len, out);
    fflush(out);
}

static bool driver_read_line(void *userdata, char *buf, size_t cap)
{
    (void)userdata;
    if (cap == 0 || !fgets(buf, (int)(cap > INT32_MAX ? INT32_MAX : cap), stdin))
        return false;
    buf[strcspn(buf, "\n")] = '\0';
    return true;
}

int host_run_command_driver(host_driver_fn driver, gufo_model *model, const char *provider_id, const char *command,
                            const gufo_cancel *cancel, const gufo_options *options, int argc, char **argv)
{
    gufo_command_io io = {
        .struct_size = sizeof io,
        .write_out = driver_write,
        .read_line = driver_read_line,
        .userdata = stdout,
        .cancel = cancel,
        .options = options,
        .argc = argc,
        .argv = argv,
    };
    gufo_error err = {0};
    gufo_status st = driver(model, &io, &err);
    fflush(stdout);
    if (st == GUFO_E_CANCELLED) {
        host_error("interrupted");
        return HOST_EXIT_INTERRUPTED;
    }
    if (st != GUFO_OK) {
        host_error("%s: %s failed: %s", provider_id, command, host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}
