/*
 * budget.h: one bound the daemon keeps on what clients make it hold (the
 * request body bytes held at once, the answer bytes, the admitted work, the
 * chains open streams hold, the connections open, the batch chunks on the
 * pool, the streams of one connection): how much is held now and how much
 * may be, changed only through reserve, take and release, so that no caller
 * writes the arithmetic itself (server/budget.c).
 *
 * Each holder keeps what it holds (a request its body bytes, an answer its
 * bytes) and releases exactly that: a budget never learns who holds what.
 *
 * Threads: any thread. The count is one atomic word: srv_budget_reserve
 * is all or nothing (a compare-and-swap loop), so a bound shared by several
 * threads or event loops holds exactly, never passed however they race;
 * with one thread it costs an uncontended atomic operation. The limit is
 * set once, before the budget is shared.
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
void srv_budget_init(srv_budget *b, size_t limit);

/* n more, when used + n stays within the limit: then true. Otherwise
 * nothing changes and false. n = 0 fits unless a take put the budget past
 * its limit. */
bool srv_budget_reserve(srv_budget *b, size_t n);

/* n more whatever the limit says, for what cannot be refused any more
 * (a count the bound is checked against elsewhere, an answer that came
 * out longer than its reservation); the bound then refuses the next
 * reservations until enough is released. Saturates at SIZE_MAX. */
void srv_budget_take(srv_budget *b, size_t n);

/* n less: what the caller reserved or took before (never more). */
void srv_budget_release(srv_budget *b, size_t n);

/* What is held now. */
size_t srv_budget_used(const srv_budget *b);

/* Whether n more would fit now: a look that reserves nothing (another
 * thread may take the room meanwhile; reserve when it must hold). */
bool srv_budget_fits(const srv_budget *b, size_t n);

#endif /* SRV_BUDGET_H */
