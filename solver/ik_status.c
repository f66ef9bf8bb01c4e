/*
 * ik_status.c: names and messages of the status table in ik_status.h,
 * generated from the same X-macro as the enum.
 */
#include "solver/ik_status.h"

const char *ik_status_name(int status)
{
    switch (status) {
#define IK__STATUS_NAME(name, val, str, msg)                                                       \
    case val:                                                                                      \
        return str;
        IK_STATUS_MAP(IK__STATUS_NAME)
#undef IK__STATUS_NAME
    }
    return "unknown";
}

const char *ik_status_message(int status)
{
    switch (status) {
#define IK__STATUS_MSG(name, val, str, msg)                                                        \
    case val:                                                                                      \
        return msg;
        IK_STATUS_MAP(IK__STATUS_MSG)
#undef IK__STATUS_MSG
    }
    return "unknown status";
}
