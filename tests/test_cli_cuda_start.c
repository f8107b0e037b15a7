// SPDX-License-Identifier: MIT
/*
 * test_cli_cuda_start.c: CUDA's start on a thread of its own (plugin/cli/cli_cuda_start.h)
 * without a GPU, through stand-ins for dh_cuda_available and dh_cuda_prepare: the caller goes on
 * while they run, every waiter (before or after the answer) gets the probe's one answer and none
 * waits for the context, which is made only where the answer is 1 and is joined at the end; and
 * the library's dh_cuda_prepare answers as dh_cuda_available does.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cli_cuda_start.h"
#include "dicomhist.h"
#include "test_support.h"

/* A stand-in that blocks until the test opens its gate, counting its calls. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_changed = PTHREAD_COND_INITIALIZER;
static int gate_open, calls, answer;

static int gated_prepare(void)
{
    pthread_mutex_lock(&gate_lock);
    calls++;
    pthread_cond_broadcast(&gate_changed);
    while (!gate_open)
        pthread_cond_wait(&gate_changed, &gate_lock);
    int a = answer;
    pthread_mutex_unlock(&gate_lock);
    return a;
}

static void reset_gate(int open, int value)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = open;
    calls = 0;
    answer = value;
    pthread_mutex_unlock(&gate_lock);
}

static void open_gate(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_changed);
    pthread_mutex_unlock(&gate_lock);
}

static int gate_calls(void)
{
    pthread_mutex_lock(&gate_lock);
    int n = calls;
    pthread_mutex_unlock(&gate_lock);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

typedef struct waiter {
    cli_cuda_start *c;
    pthread_mutex_t *lock;
    int returned, got;
} waiter;

static void *wait_on(void *arg)
{
    waiter *w = arg;
    int got = cli_cuda_start_wait(w->c);
    pthread_mutex_lock(w->lock);
    w->got = got;
    w->returned = 1;
    pthread_mutex_unlock(w->lock);
    return NULL;
}

START_TEST(waiters_block_until_the_answer_then_all_get_it)
{
    enum { WAITERS = 4 };
    cli_cuda_start c;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    waiter w[WAITERS];
    pthread_t ids[WAITERS];
    reset_gate(0, 1);
    cli_cuda_start_begin(&c, gated_prepare, NULL); /* returns while it is blocked */
    pthread_mutex_lock(&gate_lock);
    while (calls == 0)
        pthread_cond_wait(&gate_changed, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    for (int i = 0; i < WAITERS; i++) {
        w[i] = (waiter){.c = &c, .lock = &lock};
        ck_assert_int_eq(pthread_create(&ids[i], NULL, wait_on, &w[i]), 0);
    }
    sleep_ms(30);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < WAITERS; i++)
        ck_assert_msg(!w[i].returned, "waiter %d returned before prepare did", i);
    pthread_mutex_unlock(&lock);
    open_gate();
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(ids[i], NULL);
        ck_assert(w[i].returned);
        ck_assert_int_eq(w[i].got, 1);
    }
    ck_assert_int_eq(cli_cuda_start_wait(&c), 1); /* again, after: the same answer at once */
    cli_cuda_start_end(&c);
    ck_assert_int_eq(gate_calls(), 1);
}
END_TEST

START_TEST(an_answer_given_before_the_wait_is_not_lost)
{
    /* prepare done long before anyone waits (no GPU: the driver fails at once) */
    for (int value = 0; value <= 1; value++) {
        cli_cuda_start c;
        reset_gate(1, value);
        cli_cuda_start_begin(&c, gated_prepare, NULL);
        sleep_ms(20);
        ck_assert_int_eq(cli_cuda_start_wait(&c), value);
        ck_assert_int_eq(cli_cuda_start_wait(&c), value);
        cli_cuda_start_end(&c);
        ck_assert_int_eq(gate_calls(), 1);
    }
}
END_TEST

START_TEST(end_without_a_wait_joins_the_thread)
{
    cli_cuda_start c;
    reset_gate(0, 0);
    cli_cuda_start_begin(&c, gated_prepare, NULL);
    open_gate();
    cli_cuda_start_end(&c); /* joins: prepare has returned afterwards */
    ck_assert_int_eq(gate_calls(), 1);
    ck_assert(c.done);
}
END_TEST

/* The second step's stand-in: counts its calls, blocks on the gate. */
static int context_calls;

static int gated_context(void)
{
    pthread_mutex_lock(&gate_lock);
    context_calls++;
    pthread_cond_broadcast(&gate_changed);
    while (!gate_open)
        pthread_cond_wait(&gate_changed, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    return 1;
}

static int answer_yes(void) { return 1; }
static int answer_no(void) { return 0; }

START_TEST(the_answer_does_not_wait_for_the_context)
{
    cli_cuda_start c;
    reset_gate(0, 0);
    pthread_mutex_lock(&gate_lock);
    context_calls = 0;
    pthread_mutex_unlock(&gate_lock);
    cli_cuda_start_begin(&c, answer_yes, gated_context);
    ck_assert_int_eq(cli_cuda_start_wait(&c), 1); /* while the context is blocked */
    pthread_mutex_lock(&gate_lock);
    while (context_calls == 0)
        pthread_cond_wait(&gate_changed, &gate_lock); /* it runs after the answer was given */
    pthread_mutex_unlock(&gate_lock);
    open_gate();
    cli_cuda_start_end(&c); /* joins the context's step */
    ck_assert_int_eq(context_calls, 1);
}
END_TEST

START_TEST(no_context_where_the_answer_is_no)
{
    cli_cuda_start c;
    reset_gate(1, 0);
    context_calls = 0;
    cli_cuda_start_begin(&c, answer_no, gated_context);
    ck_assert_int_eq(cli_cuda_start_wait(&c), 0);
    cli_cuda_start_end(&c);
    ck_assert_int_eq(context_calls, 0);
}
END_TEST

START_TEST(the_library_prepare_answers_as_cuda_available)
{
    cli_cuda_start c;
    cli_cuda_start_begin(&c, dh_cuda_available, dh_cuda_prepare);
    int usable = cli_cuda_start_wait(&c);
    cli_cuda_start_end(&c);
    ck_assert_int_eq(usable, dh_cuda_available());
    ck_assert_int_eq(dh_cuda_prepare(), usable); /* again: the same, CUDA's state kept */
}
END_TEST

/* The wait mode: none asked (CUDA's default kept) unless DICOMHIST_CUDA_WAIT names one; the library sets one where a
 * GPU is usable (on the GPU host, test_cli_cuda_start_gpu) and refuses a value CUDA lacks; the
 * command's prepare still answers as dh_cuda_available does. */
START_TEST(the_wait_mode_asked)
{
    unsetenv("DICOMHIST_CUDA_WAIT");
    ck_assert_int_eq(cli_cuda_wait_asked(), -1);
    const char *names[] = {"auto", "spin", "yield", "block"};
    const dh_cuda_wait modes[] = {DH_CUDA_WAIT_AUTO, DH_CUDA_WAIT_SPIN, DH_CUDA_WAIT_YIELD,
                                  DH_CUDA_WAIT_BLOCK};
    for (int i = 0; i < 4; i++) {
        setenv("DICOMHIST_CUDA_WAIT", names[i], 1);
        ck_assert_int_eq(cli_cuda_wait_asked(), (int)modes[i]);
    }
    setenv("DICOMHIST_CUDA_WAIT", "Spin", 1); /* not a name: none asked */
    ck_assert_int_eq(cli_cuda_wait_asked(), -1);
    setenv("DICOMHIST_CUDA_WAIT", "block", 1);
    ck_assert_int_eq(cli_cuda_prepare_waiting(), dh_cuda_available());
    unsetenv("DICOMHIST_CUDA_WAIT");
    const int usable = dh_cuda_available();
    ck_assert_int_eq(dh_cuda_set_wait((dh_cuda_wait)3), 0);
    ck_assert_int_eq(dh_cuda_set_wait(DH_CUDA_WAIT_YIELD), usable);
    ck_assert_int_eq(cli_cuda_prepare_waiting(), usable);
    ck_assert_int_eq(dh_cuda_set_wait(DH_CUDA_WAIT_BLOCK), usable); /* the context made: still */
    ck_assert_int_eq(dh_cuda_set_wait(DH_CUDA_WAIT_AUTO), usable);
}
END_TEST

int main(void)
{
    dh_test tests[] = {DH_TEST(waiters_block_until_the_answer_then_all_get_it),
                       DH_TEST(an_answer_given_before_the_wait_is_not_lost),
                       DH_TEST(end_without_a_wait_joins_the_thread),
                       DH_TEST(the_answer_does_not_wait_for_the_context),
                       DH_TEST(no_context_where_the_answer_is_no),
                       DH_TEST(the_library_prepare_answers_as_cuda_available),
                       DH_TEST(the_wait_mode_asked)};
    return dh_test_run(dh_test_suite("cli_cuda_start", 0, DH_TESTS(tests)));
}
