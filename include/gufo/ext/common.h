/* gufo/ext/common.h — macros every public header uses.
 *
 * GUFO_EXT_API marks a function exported by gufo_ext_runtime. The runtime is
 * compiled with hidden visibility, so anything without this marker is private
 * to the runtime and cannot be linked by an extension (the symbol audit checks
 * the same thing from the other side).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_COMMON_H
#define GUFO_EXT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(GUFO_EXT_RUNTIME_BUILD)
#    define GUFO_EXT_API __declspec(dllexport)
#  else
#    define GUFO_EXT_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define GUFO_EXT_API __attribute__((visibility("default")))
#else
#  define GUFO_EXT_API
#endif

#if defined(__GNUC__)
#  define GUFO_EXT_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#  define GUFO_EXT_PRINTF(fmt_index, first_arg)
#endif

#ifdef __cplusplus
#  define GUFO_EXT_BEGIN_DECLS extern "C" {
#  define GUFO_EXT_END_DECLS }
#else
#  define GUFO_EXT_BEGIN_DECLS
#  define GUFO_EXT_END_DECLS
#endif

/**
 * True when `*ptr`, a struct of type `type` that starts with `size_t
 * struct_size` (an interface, a parameter or info struct), is big enough to
 * hold `field`: the side that built it knew the field. Read a field only when
 * this holds; what lies past struct_size is not there. `ptr` is evaluated
 * more than once.
 * @since 0.2.2
 */
#define GUFO_EXT_HAS_FIELD(type, ptr, field) \
    ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/**
 * True when the interface `*iface` of type `type` has the slot `slot` and
 * it is set (not NULL): how a caller asks for an optional slot. Required
 * slots need no asking: the registry refuses a provider whose interface
 * lacks one (see gufo_provider.iface).
 * @since 0.2.2
 */
#define GUFO_EXT_HAS_SLOT(type, iface, slot) (GUFO_EXT_HAS_FIELD(type, iface, slot) && (iface)->slot != NULL)

/*
 * Room to grow. Structs passed in arrays (gufo_decode_item, gufo_embeddings_item,
 * gufo_decisions_item, gufo_chat_message, gufo_tool_call, and
 * gufo_step_output, which a decode item holds) end with `uint64_t
 * reserved[N]` instead of starting with struct_size. A later revision of the
 * same minor turns reserved words into fields whose zero value means "as
 * before", so whoever fills such a struct zeroes it (designated initializers,
 * `= {0}`, calloc or memset) and keeps working unchanged. A size field in an
 * element would make every callee walk the array by the caller's stride
 * (items + i * items->struct_size) instead of items[i]: reserved space keeps
 * plain indexing. The runtime checks that reserved words are zero where it
 * sees the struct (gufo_step_output_deliver()), so a caller that forgets
 * fails now, not when the word gains a meaning. Structs passed alone (batches,
 * parameters, interfaces) keep struct_size.
 */

/** A token id. Negative values never name a token. @since 0.1.1 */
typedef int32_t gufo_token;

#endif /* GUFO_EXT_COMMON_H */
