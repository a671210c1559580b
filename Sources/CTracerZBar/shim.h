#ifndef CTRACERZBAR_SHIM_H
#define CTRACERZBAR_SHIM_H

// ZBar: QR codes in an image (a signed health certificate's "HC1:" text).
#include <zbar.h>

#endif
