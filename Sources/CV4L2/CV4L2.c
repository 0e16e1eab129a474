// Everything in CV4L2 is in its header; this file gives the C target a translation unit.
#include "CV4L2.h"
