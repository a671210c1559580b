#ifndef CTRACER_SYSTEMD_SHIM_H
#define CTRACER_SYSTEMD_SHIM_H

// sd_notify(3): READY, STATUS and STOPPING for units of Type=notify.
#include <systemd/sd-daemon.h>

#endif
