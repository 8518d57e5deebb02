/* The C ABI test: logs a known sequence through include/loupe_timeline.h; tests/c_abi.rs
 * compiles it against libloupe_timeline.so and .a and reads the sequence back. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "loupe_timeline.h"

int main(void) {
    /* Errors: a 0 handle, a code and a message. */
    loupe_tl_event bad = loupe_tl_define("bad_level", 10, 9, NULL);
    if (bad != 0 || loupe_tl_last_error() != LOUPE_TL_EBADLEVEL || !strstr(loupe_tl_last_error_message(), "level")) {
        fprintf(stderr, "bad level accepted: %u %d\n", bad, loupe_tl_last_error());
        return 2;
    }
    if (loupe_tl_define("too_many", 1, 9, "a,b,c,d,e") != 0 || loupe_tl_last_error() != LOUPE_TL_EBADARGS) return 3;
    loupe_tl_event loop = loupe_tl_define("c_loop", 0, 9, "i");
    loupe_tl_event step = loupe_tl_define("c_step", 1, 9, "i, square, cube, neg");
    loupe_tl_event never = loupe_tl_define("c_never", 1, 0, "");
    if (!loop || !step || !never || loupe_tl_last_error() != LOUPE_TL_OK) return 4;
    if (loupe_tl_define("c_loop", 0, 9, "i") != loop) return 5; /* same definition, same handle */
    if (loupe_tl_define("c_loop", 1, 9, "i") != 0 || loupe_tl_last_error() != LOUPE_TL_EREDEFINED) return 6;
    char path[4096];
    if (loupe_tl_file_path(path, sizeof path) == 0) return 7;
    printf("path %s\n", path);
    for (uint64_t i = 0; i < 1000; i++) {
        loupe_tl_breath();
        uint64_t t0 = loupe_tl_log(loop, i, 0, 0, 0);
        uint64_t t1 = loupe_tl_log_inline(step, i, i * i, i * i * i, (uint64_t)-(int64_t)i);
        if (loupe_tl_log(never, i, 0, 0, 0) != 0) return 8; /* rate 0: never */
        if (loupe_tl_log_inline(never, i, 0, 0, 0) != 0) return 11;
        if (loupe_tl_log(0, i, 0, 0, 0) != 0) return 9;     /* the 0 handle: never */
        if (t0 == 0 || t1 < t0) return 10;
        printf("lag %" PRIu64 "\n", t1 - t0);
    }
    printf("done\n");
    return 0;
}
