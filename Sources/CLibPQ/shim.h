#ifndef PUSHTRACK_CLIBPQ_SHIM_H
#define PUSHTRACK_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
