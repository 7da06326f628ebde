/* fuzz_batch_input.c: libFuzzer target for tl_batch_run's record reader
 * (decide/batch_input.c): any bytes, read as JSONL, as OpenAI batch lines and
 * as CSV (first byte picks the record limit), each record turned into its
 * task. Every record must end as a task or an error message, never a crash,
 * a hang or a read past the buffer; the reader must consume every byte. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "decide/batch_input.h"
#include "util/strbuf.h"

static void run(const uint8_t *data, size_t size, int mode, size_t max_bytes) {
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return;
    batch_reader r;
    batch_reader_init(&r, f, mode == 2, max_bytes);
    batch_fields bf = {.context_field = "context", .id_field = "id", .context_col = 1, .id_col = 0,
                       .openai = mode == 1};
    batch_rec rec;
    uint64_t index = 0;
    while (batch_reader_next(&r, &rec) == 1) {
        batch_task t = {.index = index++};
        if (mode == 2)
            batch_task_from_csv(&r, &rec, &bf, &t);
        else
            batch_task_from_json(r.buf.buf ? r.buf.buf : "", rec.too_big ? max_bytes : r.buf.len, &rec, &bf, &t);
        if (!t.err_msg[0] && !t.context && !t.body)
            __builtin_trap(); /* neither a task nor an error */
        tl_strbuf sb = TL_STRBUF_INIT;
        if (t.context)
            batch_csv_field(&sb, t.context, t.context_len);
        tl_strbuf_free(&sb);
        batch_task_clear(&t);
    }
    if (r.offset != size)
        __builtin_trap(); /* bytes left unread */
    batch_reader_free(&r);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t max_bytes = 16 + data[0] * 4;
    for (int mode = 0; mode < 3; mode++)
        run(data + 1, size - 1, mode, max_bytes);
    return 0;
}
