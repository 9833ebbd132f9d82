#ifndef PUSHTRACK_JEMALLOC_OPTIONS_H
#define PUSHTRACK_JEMALLOC_OPTIONS_H

/// The `pushtrack` binary's jemalloc options (options.c).
extern const char *malloc_conf;
#endif
