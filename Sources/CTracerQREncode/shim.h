#ifndef CTRACERQRENCODE_SHIM_H
#define CTRACERQRENCODE_SHIM_H

// libqrencode: the QR code of a card's link (tracer token create --link … --qr FILE).
#include <qrencode.h>

#endif
