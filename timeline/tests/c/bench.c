/* C-side costs for benches/timeline.rs: ns per logged and skipped event through loupe_tl_log
 * (a call) and loupe_tl_log_inline (the header's inline rate check). Prints "name value" lines. */
#include <stdio.h>
#include <time.h>

#include "loupe_timeline.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define BEST(name, stmt)                                                     \
    do {                                                                     \
        double best = 1e9;                                                   \
        for (int r = 0; r < 5; r++) {                                        \
            double t0 = now_ns();                                            \
            for (long i = 0; i < N; i++) { stmt; __asm__ volatile("" ::: "memory"); } \
            double t = (now_ns() - t0) / N;                                  \
            if (t < best) best = t;                                          \
        }                                                                    \
        printf("%s %.3f\n", name, best);                                     \
    } while (0)

int main(void) {
    const long N = 20000000;
    loupe_tl_event logged = loupe_tl_define("c_logged", 1, 9, "i");
    loupe_tl_event skipped = loupe_tl_define("c_skipped", 1, 0, "i");
    if (!logged || !skipped) {
        fprintf(stderr, "%s\n", loupe_tl_last_error_message());
        return 1;
    }
    BEST("log_call", loupe_tl_log(logged, i, 1, 2, 3));
    BEST("skip_call", loupe_tl_log(skipped, i, 1, 2, 3));
    BEST("log_inline", loupe_tl_log_inline(logged, i, 1, 2, 3));
    BEST("skip_inline", loupe_tl_log_inline(skipped, i, 1, 2, 3));
    return 0;
}
