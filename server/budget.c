/*
 * budget.c: a bound kept by reserve and release (contract in budget.h).
 *
 * The count is an atomic_size_t. Reserving reads it and swaps in the new
 * value only if nobody changed it meanwhile (retrying otherwise), so two
 * threads can never both take the last room; taking and releasing are
 * plain atomic additions. Relaxed ordering: a budget orders nothing but
 * itself (what a reservation protects is handed over by other means, the
 * pool's queue or the loop thread).
 */
#include "server/budget.h"

void srv_budget_init(srv_budget *b, size_t limit)
{
    atomic_init(&b->used, 0);
    b->limit = limit;
}

bool srv_budget_reserve(srv_budget *b, size_t n)
{
    size_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (n > b->limit || used > b->limit - n)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, used + n,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

void srv_budget_take(srv_budget *b, size_t n)
{
    size_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    size_t next;
    do {
        next = used > SIZE_MAX - n ? SIZE_MAX : used + n;
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, next, memory_order_relaxed,
                                                    memory_order_relaxed));
}

void srv_budget_release(srv_budget *b, size_t n)
{
    atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
}

size_t srv_budget_used(const srv_budget *b)
{
    return atomic_load_explicit(&((srv_budget *)b)->used, memory_order_relaxed);
}

bool srv_budget_fits(const srv_budget *b, size_t n)
{
    size_t used = srv_budget_used(b);
    return n <= b->limit && used <= b->limit - n;
}
