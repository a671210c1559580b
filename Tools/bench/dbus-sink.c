/* The baseline for Tools/bench/bluez: the least a libdbus client can do with BlueZ's advert
 * stream. It adds the same match rule as tracer, reads and dispatches every PropertiesChanged
 * from org.bluez, counts those for org.bluez.Device1 that carry an RSSI, and prints the count
 * when SIGTERM comes.
 *
 *   cc -O2 -o dbus-sink dbus-sink.c $(pkg-config --cflags --libs dbus-1)
 *   DBUS_SYSTEM_BUS_ADDRESS=unix:path=… ./dbus-sink
 */
#include <dbus/dbus.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t stop = 0;
static unsigned long long count = 0;

static void on_term(int sig) { (void)sig; stop = 1; }

static DBusHandlerResult filter(DBusConnection *c, DBusMessage *m, void *data) {
    (void)c; (void)data;
    if (dbus_message_get_type(m) != DBUS_MESSAGE_TYPE_SIGNAL) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    if (!dbus_message_has_member(m, "PropertiesChanged")) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    DBusMessageIter it, dict, entry;
    const char *interface = NULL;
    if (!dbus_message_iter_init(m, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_STRING)
        return DBUS_HANDLER_RESULT_HANDLED;
    dbus_message_iter_get_basic(&it, &interface);
    if (strcmp(interface, "org.bluez.Device1") != 0 || !dbus_message_iter_next(&it)) return DBUS_HANDLER_RESULT_HANDLED;
    dbus_message_iter_recurse(&it, &dict);
    while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
        const char *key = NULL;
        dbus_message_iter_recurse(&dict, &entry);
        dbus_message_iter_get_basic(&entry, &key);
        if (strcmp(key, "RSSI") == 0) { count++; break; }
        dbus_message_iter_next(&dict);
    }
    return DBUS_HANDLER_RESULT_HANDLED;
}

int main(void) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *c = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error);
    if (!c) { fprintf(stderr, "dbus-sink: %s\n", error.message); return 1; }
    dbus_connection_set_exit_on_disconnect(c, FALSE);
    dbus_bus_add_match(c, "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
                          "member='PropertiesChanged'", &error);
    if (dbus_error_is_set(&error)) { fprintf(stderr, "dbus-sink: %s\n", error.message); return 1; }
    dbus_connection_add_filter(c, filter, NULL, NULL);
    signal(SIGTERM, on_term);
    printf("ready\n");
    fflush(stdout);
    while (!stop && dbus_connection_read_write_dispatch(c, 100)) {}
    printf("%llu\n", count);
    return 0;
}
