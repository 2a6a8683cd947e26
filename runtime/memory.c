/* runtime/memory.c — budgeted memory pools.
 *
 * A pool counts bytes per kind (host, device) against the host's limits and
 * per (tag, kind) for diagnostics. Every live allocation is remembered in an
 * open-addressing table keyed by pointer, so gufo_memory_free() needs only the
 * pointer and device pointers (which we cannot prefix with a header) work the
 * same way as host ones.
 *
 * An allocation first *reserves* its bytes under the lock, then allocates
 * without it (a large aligned allocation or cudaMalloc can be slow), then
 * records the pointer. If the reservation does not fit, the pressure handler
 * runs with the lock released, because the host frees memory from this very
 * pool inside it; then the reservation is tried exactly once more.
 */
#include <gufo/host/memory.h>

#include <gufo/ext/log.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TAG_MAX 64 /* tag bytes, NUL included (memory.h: at most 63) */
#define DEFAULT_ALIGNMENT 64
#define DEVICE_MAX_ALIGNMENT 256 /* what cudaMalloc/hipMalloc guarantee */
#define N_KINDS 2

static const char *const k_kind_name[N_KINDS] = {"host", "device"};

/* Usage of one (tag, kind). Allocated one by one so live records can point at it. */
typedef struct tag_stat {
    char tag[TAG_MAX];
    gufo_memory_kind kind;
    uint64_t alloc_bytes;   /* bytes of live gufo_memory_alloc() blocks */
    uint64_t allocations;   /* number of those blocks */
    uint64_t charged_bytes; /* bytes from gufo_memory_charge() not yet uncharged */
} tag_stat;

/* One live allocation; ptr == NULL marks an empty slot. */
typedef struct live_alloc {
    void *ptr;
    uint64_t size;
    tag_stat *tag;
} live_alloc;

struct gufo_memory {
    pthread_mutex_t lock;
    uint64_t limit[N_KINDS]; /* 0 = none; fixed after create */
    uint64_t used[N_KINDS];
    uint64_t peak[N_KINDS];
    gufo_memory_pressure_fn pressure;
    void *pressure_userdata;
    tag_stat **tags; /* sorted by (tag, kind) */
    size_t n_tags, cap_tags;
    live_alloc *slots; /* power-of-two capacity, at most half full */
    size_t cap_slots, n_live;
};

/* ---- Formatting ---------------------------------------------------------- */

/* Index of the binary unit that reads best for `bytes`: 0 = bytes, 1 = KiB ... 4 = TiB. */
static int byte_unit(uint64_t bytes)
{
    int unit = 0;
    while (unit < 4 && bytes >= ((uint64_t)1024 << (10 * unit))) unit++;
    return unit;
}

static void format_bytes_in(uint64_t bytes, int unit, char *buf, size_t cap)
{
    static const char *const names[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    if (unit == 0)
        snprintf(buf, cap, "%" PRIu64 " bytes", bytes);
    else
        snprintf(buf, cap, "%.1f %s", (double)bytes / (double)((uint64_t)1 << (10 * unit)), names[unit]);
}

void gufo__format_bytes(uint64_t bytes, char *buf, size_t cap)
{
    format_bytes_in(bytes, byte_unit(bytes), buf, cap);
}

/* "allocation of 1.5 GiB for tag 'kv-cache' exceeds the host memory budget:
 * 3.2 GiB of 4.0 GiB in use, 0.8 GiB left". Used, limit and what is left share
 * the limit's unit so they can be compared at a glance. */
static gufo_status over_budget(gufo_error *err, const char *what, uint64_t bytes, const char *tag,
                               gufo_memory_kind kind, uint64_t used, uint64_t limit)
{
    char asked[32], in_use[32], total[32], left[32];
    int unit = byte_unit(limit);
    gufo__format_bytes(bytes, asked, sizeof asked);
    format_bytes_in(used, unit, in_use, sizeof in_use);
    format_bytes_in(limit, unit, total, sizeof total);
    format_bytes_in(used < limit ? limit - used : 0, unit, left, sizeof left);
    return gufo_error_set(err, GUFO_E_OVER_BUDGET,
                          "%s of %s for tag '%s' exceeds the %s memory budget: %s of %s in use, %s left%s", what, asked,
                          tag, k_kind_name[kind], in_use, total, left,
                          bytes > limit ? " (the budget is smaller than this one request)" : "");
}

/* ---- Tags ---------------------------------------------------------------- */

static int tag_compare(const tag_stat *t, const char *tag, gufo_memory_kind kind)
{
    int c = strcmp(t->tag, tag);
    if (c != 0) return c;
    return (int)t->kind - (int)kind;
}

/* Binary search; returns the index where (tag, kind) is or would be inserted. */
static size_t tag_position(const gufo_memory *m, const char *tag, gufo_memory_kind kind, bool *found)
{
    size_t lo = 0, hi = m->n_tags;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = tag_compare(m->tags[mid], tag, kind);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static tag_stat *tag_find(const gufo_memory *m, const char *tag, gufo_memory_kind kind)
{
    bool found;
    size_t pos = tag_position(m, tag, kind, &found);
    return found ? m->tags[pos] : NULL;
}

/* Finds or inserts (tag, kind), keeping the array sorted; NULL when out of memory. Lock held. */
static tag_stat *tag_get(gufo_memory *m, const char *tag, gufo_memory_kind kind)
{
    bool found;
    size_t pos = tag_position(m, tag, kind, &found);
    if (found) return m->tags[pos];
    if (m->n_tags == m->cap_tags) {
        size_t cap = m->cap_tags ? m->cap_tags * 2 : 16;
        tag_stat **grown = realloc(m->tags, cap * sizeof *grown);
        if (!grown) return NULL;
        m->tags = grown;
        m->cap_tags = cap;
    }
    tag_stat *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    snprintf(t->tag, sizeof t->tag, "%s", tag);
    t->kind = kind;
    memmove(&m->tags[pos + 1], &m->tags[pos], (m->n_tags - pos) * sizeof *m->tags);
    m->tags[pos] = t;
    m->n_tags++;
    return t;
}

/* ---- Live-allocation table --------------------------------------------- */

static size_t slot_hash(const void *ptr, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)ptr;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL; /* a 64-bit mixer: allocation addresses share low and high bits */
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static live_alloc *slot_find(const gufo_memory *m, const void *ptr)
{
    if (!m->cap_slots) return NULL;
    for (size_t i = slot_hash(ptr, m->cap_slots);; i = (i + 1) & (m->cap_slots - 1)) {
        if (m->slots[i].ptr == ptr) return &m->slots[i];
        if (!m->slots[i].ptr) return NULL;
    }
}

static void slot_put(live_alloc *slots, size_t cap, live_alloc rec)
{
    size_t i = slot_hash(rec.ptr, cap);
    while (slots[i].ptr) i = (i + 1) & (cap - 1);
    slots[i] = rec;
}

static bool slots_reserve_one(gufo_memory *m)
{
    if ((m->n_live + 1) * 2 <= m->cap_slots) return true;
    size_t cap = m->cap_slots ? m->cap_slots * 2 : 64;
    live_alloc *slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < m->cap_slots; i++)
        if (m->slots[i].ptr) slot_put(slots, cap, m->slots[i]);
    free(m->slots);
    m->slots = slots;
    m->cap_slots = cap;
    return true;
}

/* Removes a slot with backward-shift deletion, so lookups never need tombstones. */
static void slot_remove(gufo_memory *m, live_alloc *slot)
{
    size_t mask = m->cap_slots - 1;
    size_t hole = (size_t)(slot - m->slots);
    for (size_t i = (hole + 1) & mask; m->slots[i].ptr; i = (i + 1) & mask) {
        size_t home = slot_hash(m->slots[i].ptr, m->cap_slots);
        /* Move entry i into the hole unless its home lies cyclically in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole] = (live_alloc){0};
    m->n_live--;
}

/* ---- Budget -------------------------------------------------------------- */

static void lock(const gufo_memory *m)
{
    pthread_mutex_lock((pthread_mutex_t *)&m->lock);
}

static void unlock(const gufo_memory *m)
{
    pthread_mutex_unlock((pthread_mutex_t *)&m->lock);
}

/* Counts `bytes` when they fit. Lock held. */
static bool try_reserve(gufo_memory *m, gufo_memory_kind kind, uint64_t bytes)
{
    uint64_t limit = m->limit[kind], used = m->used[kind];
    if (limit ? bytes > limit - (used < limit ? used : limit) : bytes > UINT64_MAX - used) return false;
    m->used[kind] = used + bytes;
    if (m->used[kind] > m->peak[kind]) m->peak[kind] = m->used[kind];
    return true;
}

static void unreserve(gufo_memory *m, gufo_memory_kind kind, uint64_t bytes)
{
    m->used[kind] -= bytes < m->used[kind] ? bytes : m->used[kind];
}

/* Reserves budget, asking the pressure handler (lock released) once when it does not fit. */
static gufo_status reserve(gufo_memory *m, gufo_memory_kind kind, uint64_t bytes, const char *tag, const char *what,
                           gufo_error *err)
{
    lock(m);
    bool ok = try_reserve(m, kind, bytes);
    gufo_memory_pressure_fn pressure = m->pressure;
    void *userdata = m->pressure_userdata;
    unlock(m);
    if (ok) return GUFO_OK;

    /* No eviction can make room for more than the whole budget, so don't ask. */
    bool can_fit = !m->limit[kind] || bytes <= m->limit[kind];
    if (pressure && can_fit && pressure(userdata, kind, bytes)) {
        lock(m);
        ok = try_reserve(m, kind, bytes);
        unlock(m);
        if (ok) return GUFO_OK;
    }

    lock(m);
    uint64_t used = m->used[kind];
    unlock(m);
    if (!m->limit[kind])
        return gufo_error_set(err, GUFO_E_OVER_BUDGET, "%s for tag '%s' would overflow the %s memory counter", what,
                              tag, k_kind_name[kind]);
    return over_budget(err, what, bytes, tag, kind, used, m->limit[kind]);
}

/* ---- Validation ---------------------------------------------------------- */

static gufo_status check_request(const gufo_memory *m, gufo_memory_kind kind, const char *tag, gufo_error *err)
{
    if (!m) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "memory pool is NULL");
    if ((unsigned)kind >= N_KINDS)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "memory kind %d is neither host (0) nor device (1)",
                              (int)kind);
    if (!tag || !tag[0])
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "memory requests need a tag (\"weights\", \"kv-cache\", ...)");
    if (strlen(tag) >= TAG_MAX)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "memory tag '%.40s...' is longer than %d bytes", tag,
                              TAG_MAX - 1);
    return GUFO_OK;
}

/* ---- Public API ---------------------------------------------------------- */

GUFO_EXT_API gufo_status gufo_memory_create(const gufo_memory_limits *limits, gufo_memory **out, gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_memory_create: out is NULL");
    *out = NULL;
    if (limits && limits->struct_size < sizeof *limits)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_memory_limits.struct_size is %zu; set it to sizeof(gufo_memory_limits) (%zu)",
                              limits->struct_size, sizeof *limits);
    gufo_memory *m = calloc(1, sizeof *m);
    if (!m) return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory creating a memory pool");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "could not create the memory pool's lock");
    }
    if (limits) {
        m->limit[GUFO_MEMORY_HOST] = limits->host_bytes;
        m->limit[GUFO_MEMORY_DEVICE] = limits->device_bytes;
    }
    *out = m;
    return GUFO_OK;
}

static void report_leaks(const gufo_memory *m)
{
    for (size_t i = 0; i < m->n_tags; i++) {
        const tag_stat *t = m->tags[i];
        char size[32];
        if (t->allocations) {
            gufo__format_bytes(t->alloc_bytes, size, sizeof size);
            gufo_log(GUFO_LOG_WARN, "memory",
                     "leak: %" PRIu64 " allocation(s) of %s %s memory under tag '%s' were never freed; releasing them "
                     "with the pool",
                     t->allocations, size, k_kind_name[t->kind], t->tag);
        }
        if (t->charged_bytes) {
            gufo__format_bytes(t->charged_bytes, size, sizeof size);
            gufo_log(GUFO_LOG_WARN, "memory", "leak: %s of %s memory charged under tag '%s' was never uncharged", size,
                     k_kind_name[t->kind], t->tag);
        }
    }
}

GUFO_EXT_API void gufo_memory_destroy(gufo_memory *memory)
{
    if (!memory) return;
    report_leaks(memory);
    for (size_t i = 0; i < memory->cap_slots; i++) {
        live_alloc *s = &memory->slots[i];
        if (!s->ptr) continue;
        if (s->tag->kind == GUFO_MEMORY_DEVICE)
            gufo__device_free(s->ptr);
        else
            free(s->ptr);
    }
    for (size_t i = 0; i < memory->n_tags; i++) free(memory->tags[i]);
    free(memory->tags);
    free(memory->slots);
    pthread_mutex_destroy(&memory->lock);
    free(memory);
}

GUFO_EXT_API void gufo_memory_set_pressure_handler(gufo_memory *memory, gufo_memory_pressure_fn fn, void *userdata)
{
    if (!memory) return;
    lock(memory);
    memory->pressure = fn;
    memory->pressure_userdata = fn ? userdata : NULL;
    unlock(memory);
}

static gufo_status raw_alloc(gufo_memory_kind kind, size_t size, size_t alignment, const char *tag, void **out,
                             gufo_error *err)
{
    if (kind == GUFO_MEMORY_DEVICE) {
        gufo_status st = gufo__device_alloc(size, out, err);
        if (st != GUFO_OK) gufo_error_prefix(err, st, "tag '%s'", tag);
        return st;
    }
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (posix_memalign(out, alignment, size) != 0) {
        char text[32];
        *out = NULL;
        gufo__format_bytes(size, text, sizeof text);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "the system could not allocate %s of host memory for tag '%s'",
                              text, tag);
    }
    return GUFO_OK;
}

static void raw_free(gufo_memory_kind kind, void *ptr)
{
    if (kind == GUFO_MEMORY_DEVICE)
        gufo__device_free(ptr);
    else
        free(ptr);
}

/* Records a fresh block under its tag; false when the bookkeeping itself cannot allocate. */
static bool record_alloc(gufo_memory *m, gufo_memory_kind kind, void *ptr, uint64_t size, const char *tag)
{
    lock(m);
    tag_stat *t = tag_get(m, tag, kind);
    bool ok = t && slots_reserve_one(m);
    if (ok) {
        slot_put(m->slots, m->cap_slots, (live_alloc){.ptr = ptr, .size = size, .tag = t});
        m->n_live++;
        t->alloc_bytes += size;
        t->allocations++;
    } else {
        unreserve(m, kind, size);
    }
    unlock(m);
    return ok;
}

GUFO_EXT_API gufo_status gufo_memory_alloc(gufo_memory *memory, gufo_memory_kind kind, size_t size, size_t alignment,
                                           const char *tag, void **out, gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_memory_alloc: out is NULL");
    *out = NULL;
    gufo_status st = check_request(memory, kind, tag, err);
    if (st != GUFO_OK) return st;
    if (alignment == 0) alignment = DEFAULT_ALIGNMENT;
    if (alignment & (alignment - 1))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "alignment %zu for tag '%s' is not a power of two",
                              alignment, tag);
    if (kind == GUFO_MEMORY_DEVICE && alignment > DEVICE_MAX_ALIGNMENT)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "alignment %zu for tag '%s' exceeds the %d bytes device allocations guarantee", alignment,
                              tag, DEVICE_MAX_ALIGNMENT);
    if (size == 0) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "allocation of 0 bytes for tag '%s'", tag);
    /* Without a backend the answer is "unsupported", whatever the budget says:
     * never make the host evict sessions for memory that cannot exist. */
    if (kind == GUFO_MEMORY_DEVICE && strcmp(gufo__device_backend(), "none") == 0)
        return gufo__device_alloc(size, out, err);

    st = reserve(memory, kind, size, tag, "allocation", err);
    if (st != GUFO_OK) return st;

    void *ptr = NULL;
    st = raw_alloc(kind, size, alignment, tag, &ptr, err);
    if (st != GUFO_OK) {
        lock(memory);
        unreserve(memory, kind, size);
        unlock(memory);
        return st;
    }
    if (!record_alloc(memory, kind, ptr, size, tag)) {
        raw_free(kind, ptr);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory recording an allocation for tag '%s'", tag);
    }
    *out = ptr;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_memory_free(gufo_memory *memory, void *ptr)
{
    if (!memory || !ptr) return;
    lock(memory);
    live_alloc *slot = slot_find(memory, ptr);
    if (!slot) {
        unlock(memory);
        /* Freeing something we do not own would corrupt a heap; refuse and name the bug. */
        gufo_log(GUFO_LOG_ERROR, "memory", "gufo_memory_free: %p was not allocated from this pool (ignored)", ptr);
        return;
    }
    tag_stat *t = slot->tag;
    uint64_t size = slot->size;
    t->alloc_bytes -= size;
    t->allocations--;
    unreserve(memory, t->kind, size);
    gufo_memory_kind kind = t->kind;
    slot_remove(memory, slot);
    unlock(memory);
    raw_free(kind, ptr);
}

GUFO_EXT_API gufo_status gufo_memory_charge(gufo_memory *memory, gufo_memory_kind kind, uint64_t bytes, const char *tag,
                                            gufo_error *err)
{
    gufo_status st = check_request(memory, kind, tag, err);
    if (st != GUFO_OK) return st;
    if (bytes == 0) return GUFO_OK;
    st = reserve(memory, kind, bytes, tag, "charge", err);
    if (st != GUFO_OK) return st;
    lock(memory);
    tag_stat *t = tag_get(memory, tag, kind);
    if (t)
        t->charged_bytes += bytes;
    else
        unreserve(memory, kind, bytes);
    unlock(memory);
    if (!t) return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory recording a charge for tag '%s'", tag);
    return GUFO_OK;
}

GUFO_EXT_API void gufo_memory_uncharge(gufo_memory *memory, gufo_memory_kind kind, uint64_t bytes, const char *tag)
{
    if (check_request(memory, kind, tag, NULL) != GUFO_OK || bytes == 0) return;
    lock(memory);
    tag_stat *t = tag_find(memory, tag, kind);
    uint64_t charged = t ? t->charged_bytes : 0;
    uint64_t undo = bytes < charged ? bytes : charged;
    if (t) t->charged_bytes -= undo;
    unreserve(memory, kind, undo);
    unlock(memory);
    if (undo < bytes) {
        char text[32];
        gufo__format_bytes(bytes - undo, text, sizeof text);
        gufo_log(GUFO_LOG_ERROR, "memory", "gufo_memory_uncharge: %s of %s memory under tag '%s' was never charged",
                 text, k_kind_name[kind], tag);
    }
}

static uint64_t read_counter(const gufo_memory *memory, const uint64_t *counters, gufo_memory_kind kind)
{
    if (!memory || (unsigned)kind >= N_KINDS) return 0;
    lock(memory);
    uint64_t value = counters[kind];
    unlock(memory);
    return value;
}

GUFO_EXT_API uint64_t gufo_memory_used(const gufo_memory *memory, gufo_memory_kind kind)
{
    return memory ? read_counter(memory, memory->used, kind) : 0;
}

GUFO_EXT_API uint64_t gufo_memory_limit(const gufo_memory *memory, gufo_memory_kind kind)
{
    return memory ? read_counter(memory, memory->limit, kind) : 0;
}

GUFO_EXT_API uint64_t gufo_memory_peak(const gufo_memory *memory, gufo_memory_kind kind)
{
    return memory ? read_counter(memory, memory->peak, kind) : 0;
}

GUFO_EXT_API void gufo_memory_foreach_tag(const gufo_memory *memory,
                                          void (*fn)(void *userdata, const gufo_memory_tag_usage *usage),
                                          void *userdata)
{
    if (!memory || !fn) return;
    lock(memory);
    for (size_t i = 0; i < memory->n_tags; i++) {
        const tag_stat *t = memory->tags[i];
        gufo_memory_tag_usage usage = {
            .tag = t->tag,
            .kind = t->kind,
            .bytes = t->alloc_bytes + t->charged_bytes,
            .allocations = t->allocations,
        };
        if (usage.bytes || usage.allocations) fn(userdata, &usage);
    }
    unlock(memory);
}

GUFO_EXT_API gufo_status gufo_memory_copy(gufo_memory *memory, void *dst, gufo_memory_kind dst_kind, const void *src,
                                          gufo_memory_kind src_kind, size_t size, gufo_error *err)
{
    (void)memory; /* copies are not budgeted; the pool names the device for future multi-GPU runtimes */
    if ((unsigned)dst_kind >= N_KINDS || (unsigned)src_kind >= N_KINDS)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_memory_copy: memory kind is neither host nor device");
    if (size == 0) return GUFO_OK;
    if (!dst || !src)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_memory_copy: %s pointer is NULL",
                              dst ? "source" : "destination");
    if (dst_kind == GUFO_MEMORY_HOST && src_kind == GUFO_MEMORY_HOST) {
        memmove(dst, src, size);
        return GUFO_OK;
    }
    return gufo__device_copy(dst, dst_kind, src, src_kind, size, err);
}
