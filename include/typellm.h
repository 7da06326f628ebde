/* typellm.h: the old location of the public header, kept for code written
 * against it; include <typellm/typellm.h>. Not installed. */
#ifndef TYPELLM_LEGACY_H
#define TYPELLM_LEGACY_H
#include "typellm/typellm.h"
#endif
