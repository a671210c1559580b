#ifndef CTRACERSQLITE_SHIM_H
#define CTRACERSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro, invisible to Swift: re-declare it.
static inline sqlite3_destructor_type CTracerSQLite_TRANSIENT(void) {
    return (sqlite3_destructor_type)-1;
}

#endif
