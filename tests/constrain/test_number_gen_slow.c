/* test_number_gen_slow.c: the properties of test_number_gen.c over
 * thousands of random specs and seeds (release pass only). */
#define GEN_SPECS_DEFAULT 1500
#define GEN_SEED 0x5EED5EEDull
#include "test_number_gen.c"
