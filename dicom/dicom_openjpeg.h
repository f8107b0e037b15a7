// SPDX-License-Identifier: MIT
/*
 * dicom_openjpeg.h: what the JPEG 2000 decoder and encoder share of OpenJPEG: owners for its
 * objects, and a handler that drops the messages a library must not print.
 */
#ifndef DH_DICOM_OPENJPEG_H
#define DH_DICOM_OPENJPEG_H

#include <openjpeg.h>

namespace dh_dicom_impl {

struct opj_codec_free {
    void operator()(opj_codec_t *c) const { opj_destroy_codec(c); }
};
struct opj_stream_free {
    void operator()(opj_stream_t *s) const { opj_stream_destroy(s); }
};
struct opj_image_free {
    void operator()(opj_image_t *i) const { opj_image_destroy(i); }
};

inline void opj_ignore_message(const char *, void *) {}

} // namespace dh_dicom_impl

#endif /* DH_DICOM_OPENJPEG_H */
