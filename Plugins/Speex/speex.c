#include "rawfx.h"
