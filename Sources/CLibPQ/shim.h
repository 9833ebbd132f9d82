#ifndef PUSHTRACK_CLIBPQ_SHIM_H
#define PUSHTRACK_CLIBPQ_SHIM_H
#include <libpq-fe.h>

/* The PG_DIAG_* field codes are character-literal macros, which Swift does not import. */
static const int PT_DIAG_SQLSTATE = PG_DIAG_SQLSTATE;
static const int PT_DIAG_MESSAGE_PRIMARY = PG_DIAG_MESSAGE_PRIMARY;
static const int PT_DIAG_MESSAGE_DETAIL = PG_DIAG_MESSAGE_DETAIL;
static const int PT_DIAG_MESSAGE_HINT = PG_DIAG_MESSAGE_HINT;
#endif
