/* Loupe application timeline: a levelled, rate-sampled event log in shared memory.
 *
 *   cc -O2 -I timeline/include prog.c -L $TARGET/release -lloupe_timeline -Wl,-rpath,$TARGET/release
 *   cc -O2 -I timeline/include prog.c $TARGET/release/libloupe_timeline.a -lpthread -ldl -lm
 *
 * Events go to $LOUPE_TIMELINE_DIR (default /dev/shm/loupe-timeline)/<pid>-<start>.tl, one
 * ring per thread; the Loupe agent tails them. Format and guarantees: docs/timeline.md.
 * All functions are thread-safe; loupe_tl_log and loupe_tl_breath never block or syscall.
 */
#ifndef LOUPE_TIMELINE_H
#define LOUPE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An event handle. 0 is "no event": logging it does nothing, so a failed define needs no
 * check at the log sites. */
typedef uint32_t loupe_tl_event;

/* Error codes of loupe_tl_last_error(). */
#define LOUPE_TL_OK 0
#define LOUPE_TL_EBADNAME (-1)     /* name null, empty, > 48 bytes, or not UTF-8 */
#define LOUPE_TL_EBADLEVEL (-2)    /* level not in 0..9 */
#define LOUPE_TL_EBADRATE (-3)     /* rate not in 0..9 */
#define LOUPE_TL_EBADARGS (-4)     /* > 4 argument names, or one empty or > 16 bytes */
#define LOUPE_TL_EREDEFINED (-5)   /* same name defined with another level/rate/args */
#define LOUPE_TL_ETOOMANY (-6)     /* event table full (LOUPE_TIMELINE_EVENTS, default 1024) */
#define LOUPE_TL_EUNAVAILABLE (-7) /* the ring file could not be created (message says why) */

/* Defines an event. level 0..9: its place in the hierarchy (loop 0 → phase → step); an event's
 * lag is the time since the previous event of equal or lower level on the same thread.
 * rate 0..9: logged in a breath with probability 5^(rate-9) (9: always, 8: 1/5, ... 0: never).
 * arg_names: up to 4 comma-separated names ("bytes,packets"), or NULL / "" for none.
 * Defining the same event again returns the same handle. Returns 0 on error (see
 * loupe_tl_last_error). The first call creates the process's ring file. */
loupe_tl_event loupe_tl_define(const char *name, int level, int rate, const char *arg_names);

/* Rolls this thread's rate threshold: call once per iteration of the main loop. Before a
 * thread's first breath only rate-9 events are logged. */
void loupe_tl_breath(void);

/* Logs one record (timestamp, event, CPU, thread, four arguments) if the event's rate passes
 * this thread's threshold. Returns the record's timestamp on the file clock (see
 * loupe_tl_now), or 0 if the event was skipped or dropped (no free ring). */
uint64_t loupe_tl_log(loupe_tl_event event, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);

/* The same as loupe_tl_log, with the rate check inlined into the caller: a skipped event is
 * two thread-local loads and a compare (~1 ns) instead of a call (~2.5 ns static, ~6 ns through
 * the shared library). Each translation unit caches its threads' threshold pointers. */
const volatile uint8_t *loupe_tl_threshold_ptr(void);
#if defined(__GNUC__) || defined(__clang__)
static __thread const volatile uint8_t *loupe_tl__threshold;
static inline __attribute__((always_inline)) uint64_t
loupe_tl_log_inline(loupe_tl_event event, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
    const volatile uint8_t *t = loupe_tl__threshold;
    if (__builtin_expect(t == 0, 0)) t = loupe_tl__threshold = loupe_tl_threshold_ptr();
    if (((event >> 24) & 0xf) < *t) return 0;
    return loupe_tl_log(event, a0, a1, a2, a3);
}
#else
#define loupe_tl_log_inline loupe_tl_log
#endif

/* The file clock: TSC ticks when the TSC is constant and nonstop, else CLOCK_MONOTONIC ns. */
uint64_t loupe_tl_now(void);
/* 1 if the file clock is the TSC, 0 if CLOCK_MONOTONIC nanoseconds. */
int loupe_tl_clock_is_tsc(void);

/* Writes a fresh clock calibration sample into the file header (breath does it about once a
 * second; programs that never breathe may call this now and then). */
void loupe_tl_sync_clock(void);

/* This thread's last error: 0 if the last define succeeded, else a LOUPE_TL_E* code. */
int loupe_tl_last_error(void);
/* Its message ("" if none); valid until this thread's next loupe_tl_* call. */
const char *loupe_tl_last_error_message(void);

/* Copies the ring file's path (NUL-terminated, truncated to len) into buf; returns its full
 * length, or 0 if no event has been defined yet. */
size_t loupe_tl_file_path(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LOUPE_TIMELINE_H */
