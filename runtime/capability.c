/* runtime/capability.c — capability names as manifests spell them, and probe declines. */
#include <gufo/ext/provider.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct capability_name {
    gufo_capability capability;
    const char *name;
} capability_name;

/* Append-only like the enum: the manifest schema lists the same spellings. */
static const capability_name k_capabilities[] = {
    {GUFO_CAPABILITY_TEXT_GENERATION, "text_generation"},
    {GUFO_CAPABILITY_EMBEDDINGS, "embeddings"},
    {GUFO_CAPABILITY_SPEECH_RECOGNITION, "speech_recognition"},
    {GUFO_CAPABILITY_SPEECH_SYNTHESIS, "speech_synthesis"},
    {GUFO_CAPABILITY_IMAGE_GENERATION, "image_generation"},
    {GUFO_CAPABILITY_VIDEO_GENERATION, "video_generation"},
    {GUFO_CAPABILITY_DECISIONS, "decisions"},
};

#define N_CAPABILITIES (sizeof k_capabilities / sizeof k_capabilities[0])

GUFO_EXT_API const char *gufo_capability_name(gufo_capability capability)
{
    for (size_t i = 0; i < N_CAPABILITIES; i++)
        if (k_capabilities[i].capability == capability) return k_capabilities[i].name;
    return NULL;
}

GUFO_EXT_API gufo_status gufo_capability_from_name(const char *name, gufo_capability *out)
{
    if (!name || !out) return GUFO_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < N_CAPABILITIES; i++) {
        if (strcmp(k_capabilities[i].name, name) == 0) {
            *out = k_capabilities[i].capability;
            return GUFO_OK;
        }
    }
    return GUFO_E_NOT_FOUND;
}

GUFO_EXT_API gufo_status gufo_probe_decline(gufo_probe_result *result, const char *fmt, ...)
{
    if (!result) return GUFO_E_INVALID_ARGUMENT;
    result->accept = false;
    result->reason[0] = '\0';
    if (!fmt) return GUFO_OK;
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(result->reason, sizeof result->reason, fmt, args);
    va_end(args);
    if (n < 0)
        snprintf(result->reason, sizeof result->reason, "declined (the reason could not be formatted)");
    else if ((size_t)n >= sizeof result->reason)
        gufo__utf8_trim_partial(result->reason, sizeof result->reason - 1);
    return GUFO_OK;
}
