#ifndef CTRACERZLIB_SHIM_H
#define CTRACERZLIB_SHIM_H

// zlib: a health certificate's payload is deflated (RFC 1950) before Base45.
#include <zlib.h>

#endif
