#ifndef CTRACERDBUS_SHIM_H
#define CTRACERDBUS_SHIM_H

#include <dbus/dbus.h>

// The type codes are macros Swift cannot see: re-declared as constants.
static const int CTracerDBus_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int CTracerDBus_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int CTracerDBus_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int CTracerDBus_TYPE_INT16 = DBUS_TYPE_INT16;
static const int CTracerDBus_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int CTracerDBus_TYPE_INT32 = DBUS_TYPE_INT32;
static const int CTracerDBus_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int CTracerDBus_TYPE_INT64 = DBUS_TYPE_INT64;
static const int CTracerDBus_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int CTracerDBus_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int CTracerDBus_TYPE_STRING = DBUS_TYPE_STRING;
static const int CTracerDBus_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int CTracerDBus_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int CTracerDBus_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int CTracerDBus_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int CTracerDBus_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int CTracerDBus_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;
static const int CTracerDBus_TIMEOUT_USE_DEFAULT = DBUS_TIMEOUT_USE_DEFAULT;

static const int CTracerDBus_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int CTracerDBus_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int CTracerDBus_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR;
static const int CTracerDBus_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

#endif
