/* decide.c: one typed decision with libtypellm.
 *   cc decide.c $(pkg-config --cflags --libs typellm) -o decide
 *   ./decide MODEL.gguf SCHEMA.json CONTEXT.txt */
#include <stdio.h>
#include <typellm/typellm.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf SCHEMA.json CONTEXT.txt\n", argv[0]);
        return 2;
    }
    tl_error err;
    tl_model *model = NULL;
    tl_backend *backend = NULL;
    tl_schema *schema = NULL;
    tl_decision *d = NULL;
    char *schema_text = NULL, *context = NULL;
    size_t schema_len, context_len;
    tl_session_params session = {.n_threads = 2};
    tl_status st = tl_read_file(argv[2], 1 << 20, &schema_text, &schema_len, &err);
    if (!st) st = tl_read_file(argv[3], 1 << 24, &context, &context_len, &err);
    if (!st) st = tl_schema_parse(schema_text, schema_len, &schema, &err);
    if (!st) st = tl_model_load(argv[1], &model, &err);
    if (!st) st = tl_backend_local_new(model, &session, &backend, &err);
    if (!st) st = tl_decide(backend, context, context_len, schema, NULL, &d, &err);
    if (st) {
        fprintf(stderr, "decide: %s\n", err.msg);
    } else {
        for (size_t i = 0; i < tl_decision_n_fields(d); i++) {
            char *value = tl_value_to_json(tl_decision_field_value(d, i));
            printf("%-16s %-12s p=%.3f label_mass=%.3f\n", tl_decision_field_key(d, i), value,
                   tl_decision_field_probability(d, i), tl_decision_field_label_mass(d, i));
            tl_free(value);
        }
        tl_usage u;
        tl_decision_usage(d, &u);
        printf("%lld prompt tokens, %lld forward passes\n", (long long)u.prompt_tokens, (long long)u.forward_passes);
    }
    tl_decision_free(d);
    tl_schema_free(schema);
    tl_backend_free(backend);
    tl_model_free(model);
    tl_free(schema_text);
    tl_free(context);
    return st ? 1 : 0;
}
