#ifndef CTRACERPQ_SHIM_H
#define CTRACERPQ_SHIM_H

#include <libpq-fe.h>

#endif
