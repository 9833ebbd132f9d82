#ifndef PUSHTRACK_CMICROHTTPD_SHIM_H
#define PUSHTRACK_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// The daemon flags the server always uses: one internal polling thread per pool worker, an
/// inter-thread channel (needed by `MHD_quiesce_daemon` and by resuming from other threads) and
/// suspend/resume for handlers that answer later.
///
/// poll(), not epoll: with epoll worker threads, `MHD_quiesce_daemon` races the workers to
/// remove the listening socket from their epoll sets and the loser calls MHD_PANIC
/// ("Failed to remove listen FD from epoll set"), which aborted the process under load in our
/// shutdown tests (libmicrohttpd 0.9.75). The poll() workers are only signalled.
///
/// `MHD_USE_ERROR_LOG`: libmicrohttpd's own messages (a request it refused itself, a failed
/// accept) go to the `logger` given to `pt_mhd_start`, never to standard error.
static inline unsigned int pt_mhd_server_flags(void) {
    return MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC
        | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
}

static inline int pt_hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// Percent-decoding of paths and query arguments (`MHD_OPTION_UNESCAPE_CALLBACK`) that leaves
/// `%00` as it stands. libmicrohttpd's default decodes it to a NUL, and the access handler gets
/// the path as a C string cut at that NUL: `/customer-track/upload-event%00.php` reached the
/// ingestion route. Kept as text, such a path matches no route, and no query value holds a NUL.
///
/// `%2F` and `%25` are kept too: a path segment may hold a `/` (`/api/v1/campaigns/a%2Fb`
/// names the campaign `a/b`), which the router can only tell from a separator before it is
/// decoded; it splits the path first and decodes these two in each segment, and in each query
/// name and value (`HTTPPath.decodeKept`), so `%252F` stays the text `%2F`.
static inline size_t pt_mhd_unescape(void *cls, struct MHD_Connection *connection, char *text) {
    char *read = text;
    char *write = text;
    int high, low;
    (void)cls;
    (void)connection;
    while (*read != '\0') {
        if (read[0] == '%' && (high = pt_hex_value(read[1])) >= 0
            && (low = pt_hex_value(read[2])) >= 0 && (high | low) != 0
            && !(high == 2 && (low == 0x5 || low == 0xF))) {
            *write++ = (char)(high << 4 | low);
            read += 3;
        } else {
            *write++ = *read++;
        }
    }
    *write = '\0';
    return (size_t)(write - text);
}

/// `MHD_start_daemon` is variadic and not imported by Swift: this fixes the option list the
/// server uses. `bind_address` is a numeric IPv4 or IPv6 address, or NULL for every IPv4
/// interface. A `connection_memory_limit` of 0 leaves libmicrohttpd's default. Returns NULL with
/// `errno` set on failure (EINVAL for an unparsable address; the bind's errno otherwise).
/// `logger` receives libmicrohttpd's messages as a printf format and its arguments.
/// `connections` hears of every connection opened and closed (`MHD_OPTION_NOTIFY_CONNECTION`),
/// `request_line` of every request line parsed, before its header fields
/// (`MHD_OPTION_URI_LOG_CALLBACK`; it must return NULL): with them the server closes the
/// connections whose header block is late.
static inline struct MHD_Daemon *pt_mhd_start(
    unsigned int flags, uint16_t port, const char *bind_address,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    MHD_LogCallback logger, void *logger_context,
    MHD_NotifyConnectionCallback connections, void *connections_context,
    void *(*request_line)(void *cls, const char *uri, struct MHD_Connection *connection),
    void *request_line_context,
    unsigned int thread_pool_size, unsigned int connection_limit,
    unsigned int connection_timeout_seconds, size_t connection_memory_limit)
{
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    struct MHD_OptionItem optional[3];
    int count = 0;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    if (bind_address != NULL) {
        if (inet_pton(AF_INET, bind_address, &v4.sin_addr) == 1) {
            v4.sin_family = AF_INET;
            v4.sin_port = htons(port);
            optional[count++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &v4 };
        } else if (inet_pton(AF_INET6, bind_address, &v6.sin6_addr) == 1) {
            v6.sin6_family = AF_INET6;
            v6.sin6_port = htons(port);
            flags |= MHD_USE_IPv6;
            optional[count++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &v6 };
        } else {
            errno = EINVAL;
            return NULL;
        }
    }
    if (connection_memory_limit > 0) {
        optional[count++] = (struct MHD_OptionItem){
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory_limit, NULL };
    }
    optional[count++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    errno = 0;
    return MHD_start_daemon(
        flags, port, NULL, NULL, handler, handler_context,
        /* First, so that no message of the start itself goes to standard error. */
        MHD_OPTION_EXTERNAL_LOGGER, logger, logger_context,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_NOTIFY_CONNECTION, connections, connections_context,
        MHD_OPTION_URI_LOG_CALLBACK, request_line, request_line_context,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_UNESCAPE_CALLBACK, pt_mhd_unescape, NULL,
        MHD_OPTION_ARRAY, optional,
        MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0).
static inline uint16_t pt_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// Connections open now, in every thread of the pool.
static inline unsigned int pt_mhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

/// The socket of a connection (`MHD_get_connection_info` is variadic), or -1.
static inline int pt_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// What the connection-notification callback stored for the connection, or NULL.
static inline void *pt_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// The dotted quad of four octets into `buffer` (16 bytes at least, else empty): what
/// `inet_ntop(AF_INET, …)` writes, without the `sprintf` it costs per request.
static inline void pt_format_ipv4(const unsigned char *octets, char *buffer, size_t size) {
    buffer[0] = '\0';
    if (size < 16) return;
    char *cursor = buffer;
    for (int i = 0; i < 4; i++) {
        unsigned value = octets[i];
        if (value >= 100) *cursor++ = (char)('0' + value / 100);
        if (value >= 10) *cursor++ = (char)('0' + value / 10 % 10);
        *cursor++ = (char)('0' + value % 10);
        if (i < 3) *cursor++ = '.';
    }
    *cursor = '\0';
}

/// The client's address as text (the peer of the socket: a proxy's when one is in front) into
/// `buffer` of `size` bytes (INET6_ADDRSTRLEN fits every one); an empty string when unknown.
static inline void pt_mhd_client_address(
    struct MHD_Connection *connection, char *buffer, size_t size)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    buffer[0] = '\0';
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        pt_format_ipv4(
            (const unsigned char *)&((const struct sockaddr_in *)address)->sin_addr, buffer, size);
    } else if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        /* An IPv4 client of a dual-stack socket is logged as IPv4. */
        if (IN6_IS_ADDR_V4MAPPED(v6)) {
            pt_format_ipv4(&v6->s6_addr[12], buffer, size);
        } else {
            inet_ntop(AF_INET6, v6, buffer, size);
        }
    }
}

static inline enum MHD_ConnectionNotificationCode pt_mhd_connection_started(void) {
    return MHD_CONNECTION_NOTIFY_STARTED;
}

/// A response holding its own copy of `size` bytes of `buffer`.
static inline struct MHD_Response *pt_mhd_response_copying(size_t size, const void *buffer) {
    return MHD_create_response_from_buffer(size, (void *)buffer, MHD_RESPMEM_MUST_COPY);
}

static inline int pt_mhd_yes(void) { return MHD_YES; }
static inline int pt_mhd_no(void) { return MHD_NO; }
static inline enum MHD_ValueKind pt_mhd_header_kind(void) { return MHD_HEADER_KIND; }
static inline enum MHD_ValueKind pt_mhd_argument_kind(void) { return MHD_GET_ARGUMENT_KIND; }
#endif
