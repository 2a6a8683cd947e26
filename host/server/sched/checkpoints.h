/* host/server/sched/checkpoints.h — where the scheduler snapshots a prompt while
 * prefilling it, for a model that can snapshot but not rewind.
 *
 * Such a model (GUFO_CACHE_SNAPSHOT without GUFO_CACHE_TRUNCATE: recurrent
 * state) can only continue from a state whose whole history is a prefix of the
 * new prompt. The retained session at the end of a request rarely is one in
 * chat: its history holds the generated reasoning that the template drops from
 * earlier turns, and a client that edits or regenerates a message diverges
 * before the end of the last prompt. So the scheduler splits the prefill at a
 * few positions (prefill [0,c), snapshot, prefill [c,n)) and caches each
 * snapshot as a checkpoint (server/sched/cache.h).
 *
 * The rule. The route that built the prompt knows its structure and passes
 * hints with the job (srv_job_params.checkpoint_hints): for a chat, where the
 * prompt without its generation prompt ends (the next turn and a regenerate
 * continue from there) and where the last user message's content starts (a
 * branch that edits it continues from there); see server/routes/checkpoint_hints.h. A
 * prompt without hints (a raw completion) gets one position, its last token:
 * the same prompt again, or one that retokenizes the previous answer
 * differently at its start, continues from there. Each position is rounded
 * down to the model's snapshot_granularity and kept when it lies after what
 * the job already reused from the cache and before the prompt's last token;
 * duplicates go. A checkpoint the cache already holds with the same history
 * is not taken again (the scheduler asks the cache).
 *
 * Output does not depend on the positions: they only decide where prefill
 * calls split and what the cache can serve. Pure functions; any thread.
 */
#ifndef GUFO_HOST_SERVER_CHECKPOINTS_H
#define GUFO_HOST_SERVER_CHECKPOINTS_H

#include <stddef.h>
#include <stdint.h>

/** Most hints a job carries, and most positions a plan holds. */
#define SRV_CHECKPOINTS_MAX 4

/**
 * The positions, ascending, at which a prompt of `n_prompt` tokens, whose
 * first `reused` came from the cache, is snapshotted: from `hints` (`n_hints`,
 * any order; at most SRV_CHECKPOINTS_MAX are read) by the rule above, with
 * `granularity` the model's snapshot_granularity (0 or 1 = any length).
 * Writes at most SRV_CHECKPOINTS_MAX to `out` and returns how many.
 */
size_t srv_checkpoints_plan(const size_t *hints, size_t n_hints, size_t n_prompt, size_t reused,
                            uint32_t granularity, size_t out[SRV_CHECKPOINTS_MAX]);

#endif /* GUFO_HOST_SERVER_CHECKPOINTS_H */
