/* runtime/cancel.c — cancellation tokens.
 *
 * Polling must be cheap enough for the inner loop of a step, so the "fired"
 * flag is a lone atomic read with relaxed ordering. The reason is written
 * once, by whichever thread wins the race to fire, before the flag is
 * published with release ordering; readers of the reason load the flag with
 * acquire ordering, so they see the whole text or none of it.
 */
#include <gufo/host/cancel.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CANCEL_REASON_MAX 256

struct gufo_cancel {
    atomic_bool fired;   /* published after `reason` is complete */
    atomic_flag claimed; /* set by the one thread that writes `reason` */
    char reason[CANCEL_REASON_MAX];
};

GUFO_EXT_API gufo_status gufo_cancel_create(gufo_cancel **out)
{
    if (!out) return GUFO_E_INVALID_ARGUMENT;
    *out = NULL;
    gufo_cancel *cancel = malloc(sizeof *cancel);
    if (!cancel) return GUFO_E_NO_MEMORY;
    atomic_init(&cancel->fired, false);
    atomic_flag_clear(&cancel->claimed);
    cancel->reason[0] = '\0';
    *out = cancel;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_cancel_destroy(gufo_cancel *cancel)
{
    free(cancel);
}

/* Copies at most CANCEL_REASON_MAX - 1 bytes, never ending inside a UTF-8 character. */
static void copy_reason(char *dst, const char *src)
{
    size_t len = src ? strlen(src) : 0;
    if (len >= CANCEL_REASON_MAX) {
        len = CANCEL_REASON_MAX - 1;
        while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80) len--;
    }
    if (len) memcpy(dst, src, len);
    dst[len] = '\0';
}

GUFO_EXT_API void gufo_cancel_fire(gufo_cancel *cancel, const char *reason)
{
    if (!cancel) return;
    if (atomic_flag_test_and_set_explicit(&cancel->claimed, memory_order_acq_rel)) {
        /* Someone else fires; wait the few instructions until it is visible,
         * so that gufo_cancel_requested() is true when this call returns. */
        while (!atomic_load_explicit(&cancel->fired, memory_order_acquire)) sched_yield();
        return;
    }
    copy_reason(cancel->reason, reason && reason[0] ? reason : "no reason given");
    atomic_store_explicit(&cancel->fired, true, memory_order_release);
}

GUFO_EXT_API bool gufo_cancel_requested(const gufo_cancel *cancel)
{
    return cancel && atomic_load_explicit(&cancel->fired, memory_order_relaxed);
}

GUFO_EXT_API const char *gufo_cancel_reason(const gufo_cancel *cancel)
{
    if (!cancel || !atomic_load_explicit(&cancel->fired, memory_order_acquire)) return "";
    return cancel->reason;
}

GUFO_EXT_API gufo_status gufo_cancel_check(const gufo_cancel *cancel, gufo_error *err)
{
    if (!gufo_cancel_requested(cancel)) return GUFO_OK;
    return gufo_error_set(err, GUFO_E_CANCELLED, "cancelled (%s)", gufo_cancel_reason(cancel));
}
