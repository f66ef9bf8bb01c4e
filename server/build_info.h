/*
 * build_info.h: what the build compiled into the daemon. The Makefile
 * generates the definitions (build/gen/version.c and build/gen/openapi_yaml.c):
 * the version and commit shown by "ikd --version" and the ikd_build_info
 * metric, and the API contract proto/openapi.yaml served at GET
 * /openapi.yaml, byte for byte. All are constant and safe from any thread.
 */
#ifndef SRV_BUILD_INFO_H
#define SRV_BUILD_INFO_H

#include <stddef.h>

extern const char srv_version[]; /* "0.2.0" (IKD_VERSION in the Makefile) */
extern const char srv_commit[];  /* git describe --always --dirty, or "unknown" */

extern const unsigned char srv_openapi_yaml[]; /* proto/openapi.yaml, not NUL-terminated */
extern const size_t srv_openapi_yaml_len;

#endif /* SRV_BUILD_INFO_H */
