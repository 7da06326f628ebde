/* test_types_slow.c: test_types.c's type-guarantee property over 2,000
 * random schemas (800 + 800 + 400 across three models); release pass only. */
#define TYPES_N_SCHEMAS 800
#include "test_types.c"
