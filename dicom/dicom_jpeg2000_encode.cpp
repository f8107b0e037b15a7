// SPDX-License-Identifier: MIT
/*
 * dicom_jpeg2000_encode.cpp: lossless JPEG 2000 for the writer, through OpenJPEG's library: the
 * reversible 5/3 wavelet, one tile, one quality layer, as many resolution levels as the frame
 * allows up to OpenJPEG's default six. Signed pixels are coded as signed samples of HighBit + 1
 * bits, so the stream says what the dataset says. OpenJPEG writes a comment naming its version
 * unless given one, so the comment is fixed here: the same image always gives the same bytes,
 * which the sample data's byte-for-byte regeneration relies on.
 */
#include "dicom_internal.h"

#include "dicom_openjpeg.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace dh_dicom_impl {

namespace {

/* The bytes OpenJPEG writes, at the position it asks for (it seeks back to patch lengths). */
struct memory_sink {
    std::vector<uint8_t> bytes;
    size_t at = 0;
};

OPJ_SIZE_T write_sink(void *data, OPJ_SIZE_T n, void *user)
{
    memory_sink *s = static_cast<memory_sink *>(user);
    if (s->bytes.size() < s->at + n)
        s->bytes.resize(s->at + n);
    memcpy(s->bytes.data() + s->at, data, n);
    s->at += n;
    return n;
}

OPJ_OFF_T skip_sink(OPJ_OFF_T n, void *user)
{
    memory_sink *s = static_cast<memory_sink *>(user);
    if (n < 0 && (size_t)-n > s->at)
        return -1;
    s->at += n;
    return n;
}

OPJ_BOOL seek_sink(OPJ_OFF_T to, void *user)
{
    if (to < 0)
        return OPJ_FALSE;
    static_cast<memory_sink *>(user)->at = (size_t)to;
    return OPJ_TRUE;
}

void keep_first_error(const char *text, void *user)
{
    std::string *error = static_cast<std::string *>(user);
    if (error->empty())
        *error = text;
    while (!error->empty() && error->back() == '\n')
        error->pop_back();
}

/* Resolution levels: OpenJPEG's default 6 where the frame is large enough, fewer on small frames
 * (each level halves the smaller side, which must stay at least one pixel). */
int resolutions_for(uint32_t rows, uint32_t columns)
{
    const uint32_t side = rows < columns ? rows : columns;
    int levels = 6;
    while (levels > 1 && (side >> (levels - 1)) == 0)
        levels--;
    return levels;
}

std::vector<uint8_t> encode_frame(const Uint8 *cells, const native_pixels &px, uint32_t frame)
{
    const uint32_t precision = px.high_bit + 1u;
    opj_image_cmptparm_t component;
    memset(&component, 0, sizeof component);
    component.dx = component.dy = 1;
    component.w = px.columns;
    component.h = px.rows;
    component.prec = precision;
    component.sgnd = px.is_signed ? 1 : 0;
    std::unique_ptr<opj_image_t, opj_image_free> image(opj_image_create(1, &component,
                                                                    OPJ_CLRSPC_GRAY));
    if (!image)
        throw std::bad_alloc();
    image->x1 = px.columns;
    image->y1 = px.rows;

    /* The bits up to HighBit, sign-extended from there when signed (the cells may hold copies
     * of the sign, or anything, above it). */
    const uint32_t mask = (1u << precision) - 1u, sign = 1u << (precision - 1);
    const size_t count = (size_t)px.rows * px.columns;
    OPJ_INT32 *samples = image->comps[0].data;
    for (size_t i = 0; i < count; i++) {
        uint32_t v;
        if (px.allocated == 16) {
            uint16_t word;
            memcpy(&word, cells + 2 * i, 2); /* host order, as DCMTK keeps it */
            v = word & mask;
        } else {
            v = cells[i] & mask;
        }
        samples[i] = px.is_signed && (v & sign) ? (OPJ_INT32)v - (OPJ_INT32)(mask + 1u)
                                                : (OPJ_INT32)v;
    }

    opj_cparameters_t parameters;
    opj_set_default_encoder_parameters(&parameters);
    parameters.tcp_numlayers = 1;
    parameters.tcp_rates[0] = 0; /* lossless */
    parameters.cp_disto_alloc = 1;
    parameters.irreversible = 0;
    parameters.numresolution = resolutions_for(px.rows, px.columns);
    char comment[] = "dicomhist";
    parameters.cp_comment = comment;

    std::string error;
    std::unique_ptr<opj_codec_t, opj_codec_free> c(opj_create_compress(OPJ_CODEC_J2K));
    if (!c)
        throw std::bad_alloc();
    opj_set_error_handler(c.get(), keep_first_error, &error);
    opj_set_warning_handler(c.get(), opj_ignore_message, nullptr);
    opj_set_info_handler(c.get(), opj_ignore_message, nullptr);
    memory_sink sink;
    std::unique_ptr<opj_stream_t, opj_stream_free> s(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, 0));
    if (!s)
        throw std::bad_alloc();
    opj_stream_set_user_data(s.get(), &sink, nullptr);
    opj_stream_set_write_function(s.get(), write_sink);
    opj_stream_set_skip_function(s.get(), skip_sink);
    opj_stream_set_seek_function(s.get(), seek_sink);
    if (!opj_setup_encoder(c.get(), &parameters, image.get()) ||
        !opj_start_compress(c.get(), image.get(), s.get()) || !opj_encode(c.get(), s.get()) ||
        !opj_end_compress(c.get(), s.get()))
        fail(DH_DICOM_ERR_INTERNAL, "JPEG 2000 encoding of frame %u failed: %s", frame + 1,
             error.empty() ? "OpenJPEG gave no reason" : error.c_str());
    return sink.bytes;
}

} // namespace

void encode_jpeg2000_pixels(DcmDataset &ds)
{
    const native_pixels px = native_pixels_of(ds, "JPEG 2000");
    encapsulate_frames(px, EXS_JPEG2000LosslessOnly, "JPEG 2000",
                       [&px](const Uint8 *cells, uint32_t f) { return encode_frame(cells, px, f); });
}

} // namespace dh_dicom_impl
