/*
 * budget.h: one bound the daemon keeps on what clients make it hold (the
 * request body bytes held at once, the answer bytes, the admitted work, the
 * chains open streams hold, the connections open, the batch chunks on the
 * pool): how much is held now and how much
 * may be, changed only through reserve, take and release, so that no caller
 * writes the arithmetic itself. The functions are inline: the daemon's
 * hottest path (a single solve) passes through four of them.
 *
 * Each holder keeps what it holds (a request its body bytes, an answer its
 * bytes) and releases exactly that: a budget never learns who holds what.
 *
 * Threads: any thread. The count is one atomic word: srv_budget_reserve
 * is all or nothing (it reads the count and swaps in the new value only if
 * nobody changed it meanwhile, retrying otherwise), so a bound shared by
 * several threads or event loops holds exactly, never passed however they
 * race; with one thread it costs an uncontended atomic operation. Relaxed
 * ordering: a budget orders nothing but itself (what a reservation
 * protects is handed over by other means, the pool's queue or the loop
 * thread). The limit is set once, before the budget is shared.
 */
#ifndef SRV_BUDGET_H
#define SRV_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_budget {
    atomic_size_t used; /* private: use the functions below */
    size_t limit;       /* the most that may be reserved; SIZE_MAX: no bound */
} srv_budget;

/* Nothing held, bounded by limit (SIZE_MAX for a count without a bound). */
static inline void srv_budget_init(srv_budget *b, size_t limit)
{
    atomic_init(&b->used, 0);
    b->limit = limit;
}

/* n more, when used + n stays within the limit: then true. Otherwise
 * nothing changes and false. n = 0 fits unless a take put the budget past
 * its limit. */
static inline bool srv_budget_reserve(srv_budget *b, size_t n)
{
    size_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (n > b->limit || used > b->limit - n)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, used + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

/* n more whatever the limit says, for what cannot be refused any more
 * (a count the bound is checked against elsewhere, an answer that came
 * out longer than its reservation); the bound then refuses the next
 * reservations until enough is released. Saturates at SIZE_MAX. */
static inline void srv_budget_take(srv_budget *b, size_t n)
{
    size_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    size_t next;
    do {
        next = used > SIZE_MAX - n ? SIZE_MAX : used + n;
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, next, memory_order_relaxed,
                                                    memory_order_relaxed));
}

/* n less: what the caller reserved or took before (never more). */
static inline void srv_budget_release(srv_budget *b, size_t n)
{
    atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
}

/* What is held now. */
static inline size_t srv_budget_used(const srv_budget *b)
{
    return atomic_load_explicit(&((srv_budget *)b)->used, memory_order_relaxed);
}

/* Whether n more would fit now: a look that reserves nothing (another
 * thread may take the room meanwhile; reserve when it must hold). */
static inline bool srv_budget_fits(const srv_budget *b, size_t n)
{
    size_t used = srv_budget_used(b);
    return n <= b->limit && used <= b->limit - n;
}

#endif /* SRV_BUDGET_H */
