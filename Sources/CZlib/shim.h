#ifndef PUSHTRACK_CZLIB_SHIM_H
#define PUSHTRACK_CZLIB_SHIM_H
#include <zlib.h>

/// `inflateInit2` is a macro; Swift cannot call it.
static inline int pt_inflate_init2(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
#endif
