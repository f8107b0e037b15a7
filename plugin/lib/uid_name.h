// SPDX-License-Identifier: MIT
/*
 * uid_name.h: name-based UIDs for derived objects (uid_name.c).
 */
#ifndef DH_PLUGIN_UID_NAME_H
#define DH_PLUGIN_UID_NAME_H

#include <stddef.h>

/* A name-based UID (UUID version 5 under 2.25) from parts joined by NUL; returns 0, or -1 when
 * hashing failed. uid_name.c. */
int dh_uid_from_name(char uid[65], const char *const *parts, size_t count);

#endif /* DH_PLUGIN_UID_NAME_H */
