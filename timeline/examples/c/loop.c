#include <stdio.h>
#include "loupe_timeline.h"

int main(void) {
    loupe_tl_event start = loupe_tl_define("loop", 0, 9, NULL);
    loupe_tl_event rx = loupe_tl_define("rx_batch", 1, 8, "packets,bytes");
    loupe_tl_event end = loupe_tl_define("loop_end", 0, 9, "packets");
    if (!start || !rx || !end) {
        /* 0 handles are safe to log (nothing happens); say why once. */
        fprintf(stderr, "timeline: %s\n", loupe_tl_last_error_message());
    }
    for (int i = 0; i < 1000000; i++) {
        loupe_tl_breath();
        loupe_tl_log(start, 0, 0, 0, 0);
        loupe_tl_log_inline(rx, 32, 2048, 0, 0); /* rate check inlined */
        loupe_tl_log(end, 32, 0, 0, 0);
    }
    char path[4096];
    if (loupe_tl_file_path(path, sizeof path)) printf("events in %s\n", path);
    return 0;
}
