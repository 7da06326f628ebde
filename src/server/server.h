/* server.h: typellm's HTTP server (`typellm serve`). Public: the API and its
 * threading contract are in include/typellm/server.h; this private header is
 * what the server's files include. */
#ifndef TL_SERVER_SERVER_H
#define TL_SERVER_SERVER_H

#include "typellm/server.h"

#endif
