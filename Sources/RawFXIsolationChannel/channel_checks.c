/*
 * Compile-time checks of the channel's layout (rawfx_iso_channel.h), which the engine and the
 * helper compile separately and must agree on. (SwiftPM wants a source file in a C target.)
 */
#include "rawfx_iso_channel.h"

#include <stddef.h>

_Static_assert((RFX_ISO_LOG_SLOTS & (RFX_ISO_LOG_SLOTS - 1)) == 0, "the log ring's size is a power of two");
_Static_assert(RFX_ISO_GROUP_MAX <= 32, "bypass_mask has a bit per stage of a group");
_Static_assert(offsetof(rfx_iso_control, magic) == 0, "the magic opens the control block");
_Static_assert(offsetof(rfx_iso_control, request_seq) % 4 == 0 && offsetof(rfx_iso_control, reply_seq) % 4 == 0,
               "the futex words are aligned");
