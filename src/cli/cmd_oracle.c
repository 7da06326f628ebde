/* cmd_oracle.c: `typellm oracle --file F.ae --prefix TEXT`: asks the Aeon
 * completion oracle whether TEXT can still become a well-typed term for the
 * file's hole, and prints the verdict and a witness completion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

int tl_cmd_oracle(int argc, char **argv) {
    const char *file = NULL, *prefix = NULL, *prefix_file = NULL;
    long max_states = 0;
    bool show_context = false;
    const tl_opt opts[] = {
        {'f', "file", TL_OPT_STR, &file, .metavar = "F.ae", .help = "the Aeon program with a hole"},
        {'p', "prefix", TL_OPT_STR, &prefix, .metavar = "TEXT", .help = "the text typed so far in the hole"},
        {0, "prefix-file", TL_OPT_STR, &prefix_file, .metavar = "P", .help = "the prefix from a file"},
        {0, "max-states", TL_OPT_LONG, &max_states, .min = 0, .max = 1L << 40, .metavar = "N",
         .help = "oracle work limit (env AEON_TC_MAX_STATES; 0 = the default)"},
        {0, "context", TL_OPT_FLAG, &show_context, .help = "also print the hole's goal type and typing context"},
        {0},
    };
    const tl_opt_cmd cmd = {"oracle", "-f F.ae (-p TEXT | --prefix-file P) [--max-states N] [--context]",
                            "prints LIVE/DEAD/UNKNOWN for the prefix and, for LIVE, a full witness", .opts = opts,
                            .epilog = "  exit status: 0 LIVE, 3 DEAD, 4 UNKNOWN, 1 error, 2 usage\n"};
    if (tl_opt_env(&cmd, "max-states", "AEON_TC_MAX_STATES") != TL_OPT_OK)
        return 2;
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (!file || (!prefix && !prefix_file))
        return tl_opt_fail(&cmd, "need -f/--file F.ae and a prefix (-p/--prefix TEXT or --prefix-file P)");
    tl_error err = {0};
    tl_aeon_program *prog = NULL;
    tl_aeon_scope *scope = NULL;
    tl_aeon_engine *eng = NULL;
    char *pdata = NULL;
    size_t plen = 0;
    int rc = 1;
    if (tl_aeon_program_load_file(file, &prog, &err) || tl_aeon_scope_new(prog, &scope, &err)) {
        tl_cli_error("oracle", err.msg);
        goto done;
    }
    tl_aeon_oracle_limits lim = {.max_states = max_states};
    if (tl_aeon_engine_new(scope, &lim, &eng, &err)) {
        tl_cli_error("oracle", err.msg);
        goto done;
    }
    if (prefix_file) {
        if (tl_read_file(prefix_file, 1 << 20, &pdata, &plen, &err)) {
            tl_cli_error("oracle", err.msg);
            goto done;
        }
    } else {
        plen = strlen(prefix);
    }
    if (show_context) {
        tl_strbuf sb = TL_STRBUF_INIT;
        tl_aeon_scope_describe(scope, &sb);
        printf("goal: %s\ncontext:\n%s", tl_aeon_scope_goal_text(scope), tl_strbuf_cstr(&sb));
        tl_strbuf_free(&sb);
    }
    tl_aeon_state *s0 = tl_aeon_state_initial();
    tl_aeon_state *st = s0 ? tl_aeon_state_advance(s0, pdata ? pdata : prefix, plen) : NULL;
    tl_aeon_state_free(s0);
    if (!st) {
        fprintf(stderr, "typellm oracle: out of memory\n");
        goto done;
    }
    tl_strbuf wit = TL_STRBUF_INIT;
    tl_aeon_query_stats qs;
    double t0 = tl_now_s();
    tl_aeon_verdict v = tl_aeon_completion_status(eng, st, &wit, &qs);
    double dt = tl_now_s() - t0;
    printf("%s\n", tl_aeon_verdict_name(v));
    if (v == TL_AEON_LIVE)
        printf("witness: %s\naccepting: %s\n", tl_strbuf_cstr(&wit), wit.len == st->len ? "yes" : "no");
    else if (v == TL_AEON_UNKNOWN)
        printf("reason: %s\n", tl_strbuf_cstr(&wit));
    printf("work: %lld states, %.1f us\n", (long long)qs.work, dt * 1e6);
    rc = v == TL_AEON_LIVE ? 0 : v == TL_AEON_DEAD ? 3 : 4;
    tl_strbuf_free(&wit);
    tl_aeon_state_free(st);
done:
    free(pdata);
    tl_aeon_engine_free(eng);
    tl_aeon_scope_free(scope);
    tl_aeon_program_free(prog);
    return rc;
}
