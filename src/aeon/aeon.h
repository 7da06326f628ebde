/* aeon.h: the Aeon fragment front end: .ae files, typing context, checker, interpreter.
 * The declarations are public: include/typellm/aeon.h (this private header is
 * what the layers include). */
#ifndef TL_AEON_AEON_H
#define TL_AEON_AEON_H

#include "typellm/aeon.h"

#endif
