/* runtime/required_slots.c — the interface slots each capability requires,
 * checked once, when a provider loads.
 *
 * A capability header marks the slots a provider may leave NULL "(optional)";
 * every other slot is required. The registry checks the required ones here,
 * at load, so that a provider missing one is listed as unavailable with the
 * slot's name (`gufo diagnose` shows it) and no host has to check again
 * before each call. The lists follow the headers; a capability whose header
 * is experimental has none yet (its interface is still being shaped).
 */
#include <stddef.h>
#include <string.h>

#include <gufo/ext/decisions.h>
#include <gufo/ext/embeddings.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/text_generation.h>

#include "internal.h"

typedef struct required_slot {
    const char *name;
    size_t offset;
    size_t size;
} required_slot;

#define REQUIRED(type, slot) {#slot, offsetof(type, slot), sizeof(((type *)0)->slot)}

static const required_slot k_text_generation[] = {
    REQUIRED(gufo_text_generation_iface, get_info),
    REQUIRED(gufo_text_generation_iface, tokenize),
    REQUIRED(gufo_text_generation_iface, detokenize),
    REQUIRED(gufo_text_generation_iface, token_attr),
    REQUIRED(gufo_text_generation_iface, render_chat),
    REQUIRED(gufo_text_generation_iface, session_create),
    REQUIRED(gufo_text_generation_iface, session_destroy),
    REQUIRED(gufo_text_generation_iface, session_length),
    REQUIRED(gufo_text_generation_iface, prefill),
    REQUIRED(gufo_text_generation_iface, decode),
};

static const required_slot k_embeddings[] = {
    REQUIRED(gufo_embeddings_iface, get_info),
    REQUIRED(gufo_embeddings_iface, embed),
};

static const required_slot k_decisions[] = {
    REQUIRED(gufo_decisions_iface, get_info),
    REQUIRED(gufo_decisions_iface, decide),
};

const char *gufo__missing_required_slot(gufo_capability capability, const void *iface)
{
    const required_slot *slots = NULL;
    size_t n = 0;
    switch (capability) {
    case GUFO_CAPABILITY_TEXT_GENERATION:
        slots = k_text_generation, n = sizeof k_text_generation / sizeof k_text_generation[0];
        break;
    case GUFO_CAPABILITY_EMBEDDINGS:
        slots = k_embeddings, n = sizeof k_embeddings / sizeof k_embeddings[0];
        break;
    case GUFO_CAPABILITY_DECISIONS:
        slots = k_decisions, n = sizeof k_decisions / sizeof k_decisions[0];
        break;
    default:
        return NULL;
    }
    /* Every interface starts with its struct_size; a slot past it is absent. */
    size_t struct_size;
    memcpy(&struct_size, iface, sizeof struct_size);
    for (size_t i = 0; i < n; i++) {
        if (struct_size < slots[i].offset + slots[i].size)
            return slots[i].name;
        /* Each slot is a function pointer; any function pointer type holds NULL the same way. */
        void (*fn)(void);
        memcpy(&fn, (const char *)iface + slots[i].offset, sizeof fn);
        if (!fn)
            return slots[i].name;
    }
    return NULL;
}
