#ifndef PUSHTRACK_CMICROHTTPD_SHIM_H
#define PUSHTRACK_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// `MHD_start_daemon` is variadic and not imported by Swift: this fixes the option list the
/// server uses. A limit of 0 leaves libmicrohttpd's default for that option.
static inline struct MHD_Daemon *pt_mhd_start(
    unsigned int flags, uint16_t port,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    unsigned int thread_pool_size, unsigned int connection_limit,
    unsigned int connection_timeout_seconds, size_t connection_memory_limit)
{
    return MHD_start_daemon(
        flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0).
static inline uint16_t pt_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

static inline int pt_mhd_yes(void) { return MHD_YES; }
static inline int pt_mhd_no(void) { return MHD_NO; }
#endif
