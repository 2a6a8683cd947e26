/* live_sessions.c — the live-session lists and session admission (live_sessions.h). */
#include "live_sessions.h"

#include <stddef.h>

void qwen_live_add(qwen_live_list *list, qwen_live_link *link)
{
    link->prev = NULL;
    link->next = list->head;
    if (list->head)
        list->head->prev = link;
    list->head = link;
    list->count++;
}

void qwen_live_remove(qwen_live_list *list, qwen_live_link *link)
{
    if (link->prev)
        link->prev->next = link->next;
    else
        list->head = link->next;
    if (link->next)
        link->next->prev = link->prev;
    link->prev = link->next = NULL;
    list->count--;
}

gufo_status qwen_session_admit(const char *who, uint32_t model_context, uint32_t max_sessions,
                               const qwen_live_list *sessions, const gufo_session_params *params, uint32_t *context,
                               gufo_error *err)
{
    *context = model_context;
    const bool has_context = params && GUFO_EXT_HAS_FIELD(gufo_session_params, params, context_length);
    if (has_context && params->context_length) {
        if (params->context_length > model_context)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "%s session_create: context %u asked, the model holds at most %u", who,
                                  params->context_length, model_context);
        *context = params->context_length;
    }
    if (max_sessions && sessions->count >= max_sessions)
        return gufo_error_set(err, GUFO_E_LIMIT, "%s session_create: all %u sessions are in use", who, max_sessions);
    return GUFO_OK;
}
