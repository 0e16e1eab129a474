#ifndef VIGIL_CV4L2_H
#define VIGIL_CV4L2_H

// V4L2 for Swift: the kernel's videodev2.h, its ioctl numbers as constants (Swift does not
// import function-like macros such as _IOWR), and accessors for packed structs and unions.
// Vigil talks to the kernel with plain syscalls rather than libv4l2: libv4l2's conversion
// decodes MJPEG on every frame, which would defeat passthrough, and a syscall seam lets the
// emulated device in the tests stand exactly where the kernel stands.

#include <linux/videodev2.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

static const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long CV4L2_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long CV4L2_VIDIOC_QUERY_EXT_CTRL = VIDIOC_QUERY_EXT_CTRL;
static const unsigned long CV4L2_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
static const unsigned long CV4L2_VIDIOC_G_EXT_CTRLS = VIDIOC_G_EXT_CTRLS;
static const unsigned long CV4L2_VIDIOC_S_EXT_CTRLS = VIDIOC_S_EXT_CTRLS;

static const uint32_t CV4L2_CTRL_FLAG_NEXT_CTRL = V4L2_CTRL_FLAG_NEXT_CTRL;
static const uint32_t CV4L2_CTRL_FLAG_NEXT_COMPOUND = V4L2_CTRL_FLAG_NEXT_COMPOUND;
static const uint32_t CV4L2_CTRL_FLAG_DISABLED = V4L2_CTRL_FLAG_DISABLED;
static const uint32_t CV4L2_CTRL_FLAG_READ_ONLY = V4L2_CTRL_FLAG_READ_ONLY;
static const uint32_t CV4L2_CTRL_FLAG_INACTIVE = V4L2_CTRL_FLAG_INACTIVE;
static const uint32_t CV4L2_CTRL_ID_MASK = V4L2_CTRL_ID_MASK;
static const uint32_t CV4L2_CTRL_WHICH_CUR_VAL = V4L2_CTRL_WHICH_CUR_VAL;

static const uint32_t CV4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const uint32_t CV4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const uint32_t CV4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
static const uint32_t CV4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
static const uint32_t CV4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
static const uint32_t CV4L2_PIX_FMT_H264 = V4L2_PIX_FMT_H264;

static const uint32_t CV4L2_CID_BRIGHTNESS = V4L2_CID_BRIGHTNESS;
static const uint32_t CV4L2_CID_CONTRAST = V4L2_CID_CONTRAST;
static const uint32_t CV4L2_CID_POWER_LINE_FREQUENCY = V4L2_CID_POWER_LINE_FREQUENCY;
static const uint32_t CV4L2_CID_AUTO_WHITE_BALANCE = V4L2_CID_AUTO_WHITE_BALANCE;
static const uint32_t CV4L2_CID_WHITE_BALANCE_TEMPERATURE = V4L2_CID_WHITE_BALANCE_TEMPERATURE;
static const uint32_t CV4L2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO;
static const uint32_t CV4L2_CID_EXPOSURE_ABSOLUTE = V4L2_CID_EXPOSURE_ABSOLUTE;
static const uint32_t CV4L2_CID_FOCUS_AUTO = V4L2_CID_FOCUS_AUTO;
static const uint32_t CV4L2_CID_FOCUS_ABSOLUTE = V4L2_CID_FOCUS_ABSOLUTE;

/// ioctl is variadic, which Swift cannot call.
static inline int cv4l2_ioctl(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

// struct v4l2_querymenu and struct v4l2_ext_control are packed: reach their fields from C.
static inline void cv4l2_querymenu_init(struct v4l2_querymenu *m, uint32_t id, uint32_t index) {
    memset(m, 0, sizeof *m);
    m->id = id;
    m->index = index;
}
static inline const char *cv4l2_querymenu_name(const struct v4l2_querymenu *m) { return (const char *)m->name; }
static inline int64_t cv4l2_querymenu_value(const struct v4l2_querymenu *m) { return m->value; }
static inline void cv4l2_querymenu_set_name(struct v4l2_querymenu *m, const char *name) {
    strncpy((char *)m->name, name, sizeof m->name - 1);
}
static inline uint32_t cv4l2_querymenu_id(const struct v4l2_querymenu *m) { return m->id; }
static inline uint32_t cv4l2_querymenu_index(const struct v4l2_querymenu *m) { return m->index; }

static inline void cv4l2_ext_control_set(struct v4l2_ext_control *c, uint32_t id, int32_t value) {
    memset(c, 0, sizeof *c);
    c->id = id;
    c->value = value;
}
static inline uint32_t cv4l2_ext_control_id(const struct v4l2_ext_control *c) { return c->id; }
static inline int32_t cv4l2_ext_control_value(const struct v4l2_ext_control *c) { return c->value; }
static inline void cv4l2_ext_control_set_value(struct v4l2_ext_control *c, int32_t value) { c->value = value; }
static inline size_t cv4l2_ext_control_size(void) { return sizeof(struct v4l2_ext_control); }
static inline struct v4l2_ext_control *cv4l2_ext_control_at(struct v4l2_ext_control *base, uint32_t i) { return base + i; }

// Hotplug: the kernel's uevent netlink socket (udev's source), for the device monitor.
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>

/// A non-blocking socket receiving kernel uevents ("add@/devices/…/video4linux/video0"),
/// or -errno where netlink is not allowed (some containers).
static inline int cv4l2_open_uevent_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) return -errno;
    struct sockaddr_nl addr;
    memset(&addr, 0, sizeof addr);
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = 1; /* kernel events; udev's own group (2) needs udevd */
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

#endif
