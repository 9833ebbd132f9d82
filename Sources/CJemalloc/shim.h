#ifndef PUSHTRACK_CJEMALLOC_SHIM_H
#define PUSHTRACK_CJEMALLOC_SHIM_H
#include <jemalloc/jemalloc.h>

/// The version of the jemalloc linked into the `pushtrack` binary, which replaces the C
/// library's malloc for the whole process (Debian's build has no symbol prefix). Calling it
/// keeps the library a dependency of the binary under `--as-needed` linking.
static inline const char *pt_jemalloc_version(void) {
    const char *version = 0;
    size_t size = sizeof(version);
    if (mallctl("version", &version, &size, 0, 0) != 0) return 0;
    return version;
}
#endif
