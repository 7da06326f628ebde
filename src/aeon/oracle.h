/* oracle.h: the completion oracle for type-constrained decoding.
 * The declarations are public: include/typellm/aeon_oracle.h (this private header is
 * what the layers include). */
#ifndef TL_AEON_ORACLE_H
#define TL_AEON_ORACLE_H

#include "typellm/aeon_oracle.h"

#endif
