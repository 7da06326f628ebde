/* ui_assets.h: files embedded into the server at build time
 * (cmake/embed.cmake writes ui_assets.c): the playground page from
 * src/server/ui/ (named by file name: "index.html", "app.js", ...) and the
 * examples it offers from examples/ ("examples/receipt/schema.json", ...),
 * so an installed binary serves them without its source tree. */
#ifndef TL_SERVER_UI_ASSETS_H
#define TL_SERVER_UI_ASSETS_H

#include <stddef.h>

typedef struct ui_asset {
    const char *name;
    const unsigned char *data; /* len bytes, then a NUL */
    size_t len;
} ui_asset;

/* Sorted by name; ends with {NULL, NULL, 0}. */
extern const ui_asset ui_assets[];

#endif
