#include "JemallocOptions.h"

/// jemalloc reads this at its start, before `main` (its `malloc_conf`, overridden by the
/// `MALLOC_CONF` environment variable). Its defaults kept freed pages 10 s in 8 arenas: under
/// overload (`loadtest/overload.sh`, 2,000 connections) the server's peak RSS was 226 MB against
/// the C library's 169 and the 200 MB target. Two arenas (one per core) and freed pages returned
/// after 1 s kept it at 182-185 MB, for the same instructions per event (loadtest/README.md,
/// "jemalloc").
const char *malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0";
