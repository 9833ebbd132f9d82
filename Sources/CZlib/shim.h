#ifndef PUSHTRACK_CZLIB_SHIM_H
#define PUSHTRACK_CZLIB_SHIM_H
#include <zlib.h>

/// `inflateInit2` is a macro; Swift cannot call it.
static inline int pt_inflate_init2(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

/// `deflateInit2` is a macro too. `windowBits` 31 writes a gzip wrapper.
static inline int pt_deflate_init2(z_stream *stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
#endif
