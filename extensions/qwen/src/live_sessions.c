/* live_sessions.c — the live-session lists (live_sessions.h). */
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
