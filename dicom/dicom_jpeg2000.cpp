// SPDX-License-Identifier: MIT
/*
 * dicom_jpeg2000.cpp: JPEG 2000 and HTJ2K pixel data through OpenJPEG 2.5 (Debian's libopenjp2),
 * since Debian's DCMTK 3.6.7 decodes neither. Each frame's code stream is decoded from memory
 * (an OpenJPEG stream over the joined fragments), never from a temporary file.
 *
 * The code stream's own header is read by hand first (SOC, then SIZ): one component, the
 * dataset's rows and columns, no subsampling, a depth the cells can hold and a sane number of
 * tiles, all checked before OpenJPEG allocates anything from what the stream claims. Where the
 * stream and the dataset differ on precision or signedness the dataset wins, as in GDCM and
 * pydicom: the sample's low 16 bits are stored and the dataset's BitsStored and
 * PixelRepresentation interpret them (a real CT has an unsigned 13-bit stream in a signed
 * dataset; others have a signed 14-bit stream with BitsStored 16).
 *
 * OpenJPEG runs in strict mode (a truncated stream is an error, not a partly grey image), with one
 * codec thread per call (batch work parallelizes across files; OPJ_NUM_THREADS is ignored), and
 * its messages go into the failure's reason, never to a terminal.
 */
#include "dicom_internal.h"

#include "dicom_gpu.h"
#include "dicom_openjpeg.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace dh_dicom_impl {

namespace {

/* J2K and HTJ2K code streams open with SOC then SIZ. */
const frame_marker soc_siz_j2k = {"JPEG 2000", "SOC", {0xff, 0x4f, 0xff, 0x51}, 4};
const frame_marker soc_siz_htj2k = {"HTJ2K", "SOC", {0xff, 0x4f, 0xff, 0x51}, 4};

/* A JP2 file's signature box: some writers put a whole JP2 file where the bare code stream
 * belongs; GDCM reads them, and so does this. */
const Uint8 jp2_signature[12] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0d, 0x0a, 0x87, 0x0a};

/* Tiles beyond which a code stream must have this many pixels per tile on average: OpenJPEG
 * keeps several KB of state per tile from the header on, so 1x1 tiles on a 1024x1024 frame would
 * cost gigabytes the pixels never justify. 32x32 tiles keep that state within a few times the
 * frame's own size; real images use one tile or tiles of hundreds of pixels a side. */
constexpr uint64_t free_tiles = 64;
constexpr uint64_t min_pixels_per_tile = 1024;

/* The bytes OpenJPEG reads through its stream callbacks. */
struct memory_source {
    const Uint8 *data;
    uint64_t size, at;
};

OPJ_SIZE_T read_source(void *buffer, OPJ_SIZE_T n, void *user)
{
    memory_source *s = static_cast<memory_source *>(user);
    if (s->at >= s->size)
        return (OPJ_SIZE_T)-1; /* OpenJPEG's end of stream */
    const uint64_t k = std::min<uint64_t>(n, s->size - s->at);
    memcpy(buffer, s->data + s->at, k);
    s->at += k;
    return (OPJ_SIZE_T)k;
}

OPJ_OFF_T skip_source(OPJ_OFF_T n, void *user)
{
    memory_source *s = static_cast<memory_source *>(user);
    if (n < 0)
        n = -(OPJ_OFF_T)std::min<uint64_t>((uint64_t)-n, s->at);
    else if ((uint64_t)n > s->size - s->at)
        n = (OPJ_OFF_T)(s->size - s->at);
    s->at += n;
    return n;
}

OPJ_BOOL seek_source(OPJ_OFF_T to, void *user)
{
    memory_source *s = static_cast<memory_source *>(user);
    if (to < 0 || (uint64_t)to > s->size)
        return OPJ_FALSE;
    s->at = (uint64_t)to;
    return OPJ_TRUE;
}

/* OpenJPEG's error messages, kept for the failure's reason (the first two say what broke; the
 * rest repeat that a tile failed). */
void keep_error(const char *text, void *user)
{
    std::string *errors = static_cast<std::string *>(user);
    std::string line(text);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
        line.pop_back();
    if (line.empty() || errors->size() > 240)
        return;
    if (!errors->empty())
        *errors += "; ";
    *errors += line;
}

uint32_t be16(const Uint8 *p) { return (uint32_t)p[0] << 8 | p[1]; }
uint32_t be32(const Uint8 *p) { return be16(p) << 16 | be16(p + 2); }

/* The code stream inside a JP2 file: the contents of its first jp2c box (none: length 0). */
const Uint8 *jp2_code_stream(const Uint8 *d, uint64_t n, uint64_t &length)
{
    uint64_t at = 0;
    while (n - at >= 8) {
        uint64_t box = be32(d + at), header = 8;
        if (box == 1) { /* a 64-bit length follows the type */
            if (n - at < 16)
                break;
            box = (uint64_t)be32(d + at + 8) << 32 | be32(d + at + 12);
            header = 16;
        } else if (box == 0) { /* up to the end */
            box = n - at;
        }
        if (box < header || box > n - at)
            break;
        if (memcmp(d + at + 4, "jp2c", 4) == 0) {
            length = box - header;
            return d + at + header;
        }
        at += box;
    }
    length = 0;
    return d;
}

/* The frame's code stream with the padding after its end (EOC, FFD9) cut off, as GDCM does:
 * writers pad to even length, some with more than one byte. */
uint64_t without_padding(const Uint8 *d, uint64_t n)
{
    for (uint64_t i = n; i >= 2; i--)
        if (d[i - 2] == 0xff && d[i - 1] == 0xd9)
            return i;
    return n; /* no EOC at all: OpenJPEG says what is missing */
}

/* The SIZ marker segment checked against the dataset before OpenJPEG sees the stream. */
void check_siz(const Uint8 *d, uint64_t n, const dh_dicom_image &img, const char *codec,
               uint32_t frame)
{
    if (n < 4 || memcmp(d, soc_siz_j2k.bytes, 4) != 0)
        fail(DH_DICOM_ERR_MALFORMED,
             "%s frame %u does not start with a code stream header (SOC, SIZ)", codec, frame + 1);
    if (n < 41)
        fail(DH_DICOM_ERR_MALFORMED, "%s frame %u: its code stream ends inside the SIZ header",
             codec, frame + 1);
    const uint32_t xsiz = be32(d + 8), ysiz = be32(d + 12), x0 = be32(d + 16), y0 = be32(d + 20);
    const uint32_t xt = be32(d + 24), yt = be32(d + 28), xt0 = be32(d + 32), yt0 = be32(d + 36);
    const uint32_t components = be16(d + 40);
    if (xsiz <= x0 || ysiz <= y0 || xt == 0 || yt == 0 || xt0 > x0 || yt0 > y0)
        fail(DH_DICOM_ERR_MALFORMED,
             "%s frame %u: the SIZ header's image and tile grid are "
             "inconsistent",
             codec, frame + 1);
    const uint32_t width = xsiz - x0, height = ysiz - y0;
    if (width != img.format.columns || height != img.format.rows || components != 1)
        fail(DH_DICOM_ERR_MALFORMED,
             "%s frame %u is %ux%u with %u component(s), the dataset says "
             "%ux%u grayscale",
             codec, frame + 1, width, height, components, img.format.columns, img.format.rows);
    if (n < 45)
        fail(DH_DICOM_ERR_MALFORMED, "%s frame %u: its code stream ends inside the SIZ header",
             codec, frame + 1);
    const uint32_t precision = (d[42] & 0x7fu) + 1u;
    if (d[43] != 1 || d[44] != 1)
        fail(DH_DICOM_ERR_MALFORMED,
             "%s frame %u is subsampled (%ux%u), which grayscale DICOM never is", codec, frame + 1,
             d[43], d[44]);
    if (precision > img.format.bits_allocated)
        fail(DH_DICOM_ERR_MALFORMED, "%s frame %u has %u-bit samples, more than BitsAllocated %u",
             codec, frame + 1, precision, img.format.bits_allocated);
    const uint64_t tiles = (uint64_t)((xsiz - xt0 + (uint64_t)xt - 1) / xt) *
                           ((ysiz - yt0 + (uint64_t)yt - 1) / yt);
    if (tiles > free_tiles && tiles > (uint64_t)width * height / min_pixels_per_tile)
        fail(DH_DICOM_ERR_MALFORMED,
             "%s frame %u claims %llu tiles for %ux%u pixels (more than %llu "
             "tiles of fewer than %llu pixels each are refused)",
             codec, frame + 1, (unsigned long long)tiles, width, height,
             (unsigned long long)free_tiles, (unsigned long long)min_pixels_per_tile);
}

/* Marker segments from `at` up to the marker `until` (SOT ending the main header, SOD ending a
 * tile-part header): returns where `until` sits, or n when the segments run out of the stream;
 * ORs the coding style flags (Scod) of any COD segment on the way into `scod`. */
uint64_t skip_marker_segments(const Uint8 *d, uint64_t n, uint64_t at, uint32_t until,
                              uint32_t &scod)
{
    while (at + 4 <= n) {
        const uint32_t marker = be16(d + at), length = be16(d + at + 2);
        if (marker == until)
            return at;
        if ((marker >> 8) != 0xff || length < 2)
            return n;
        if (marker == 0xff52 && length >= 3 && at + 5 <= n)
            scod |= d[at + 4];
        at += 2 + length;
    }
    return n;
}

/* Debian's OpenJPEG 2.5.0 asserts, aborting the whole process, on an HT code block whose MEL
 * segment has a byte above 8F after an FF (uclouvain/openjpeg#1436; 2.5.1 returns an error). No
 * valid code stream has such a pair in its packet data: the standard keeps the marker range
 * FF90..FFFF out of it, so that markers stay unambiguous, except the SOP (FF91) and EPH (FF92)
 * markers where the coding style asks for them. So every tile-part's data is scanned for such
 * pairs before OpenJPEG sees the stream. What remains: a damaged stream that uses SOP or EPH and
 * has FF91 or FF92 inside a MEL segment still reaches that assert (docs/architecture.md). */
void check_packet_data(const Uint8 *d, uint64_t n, const char *codec, uint32_t frame)
{
    uint32_t main_scod = 0;
    uint64_t at = skip_marker_segments(d, n, 2, 0xff90, main_scod);
    uint32_t part = 0;
    while (at + 12 <= n && be16(d + at) == 0xff90) {
        part++;
        const uint64_t psot = be32(d + at + 6);
        const bool ends = n >= 2 && d[n - 2] == 0xff && d[n - 1] == 0xd9;
        const uint64_t end = psot != 0 ? at + psot : (ends ? n - 2 : n);
        if (psot != 0 && (psot < 14 || end > n))
            fail(DH_DICOM_ERR_MALFORMED,
                 "%s frame %u: tile-part %u claims %llu bytes, more than the "
                 "code stream holds (truncated?)",
                 codec, frame + 1, part, (unsigned long long)psot);
        uint32_t scod = main_scod;
        const uint64_t sod = skip_marker_segments(d, end, at + 2 + be16(d + at + 2), 0xff93, scod);
        /* memchr looks for the next 0xFF (about one byte in 256 of entropy-coded data) many
         * bytes at a time; a byte-by-byte loop here weighed on the GPU batch's parse. */
        for (uint64_t i = sod + 2; i + 1 < end; i++) {
            const void *ff = memchr(d + i, 0xff, (size_t)(end - 1 - i));
            if (ff == nullptr)
                break;
            i = (uint64_t)(static_cast<const Uint8 *>(ff) - d);
            if (d[i + 1] <= 0x8f)
                continue;
            if (d[i + 1] == 0x91 && (scod & 2)) {
                i += 5; /* SOP, its length and its packet number, which may hold any byte */
                continue;
            }
            if (d[i + 1] == 0x92 && (scod & 4)) {
                i += 1;
                continue;
            }
            fail(DH_DICOM_ERR_MALFORMED,
                 "%s frame %u: corrupt code stream: marker code FF%02X inside "
                 "the data of tile-part %u",
                 codec, frame + 1, d[i + 1], part);
        }
        if (end <= at)
            break;
        at = end;
    }
}

/* The bare code stream of one frame's bytes d[0..n) (out of a JP2 wrapper, padding after its
 * EOC cut off), checked against the dataset before any decoder sees it. */
gpu_frame checked_code_stream(const Uint8 *d, uint64_t n, const dh_dicom_image &img,
                              const char *codec, uint32_t frame)
{
    if (n >= sizeof jp2_signature && memcmp(d, jp2_signature, sizeof jp2_signature) == 0)
        d = jp2_code_stream(d, n, n);
    n = without_padding(d, n);
    check_siz(d, n, img, codec, frame);
    check_packet_data(d, n, codec, frame);
    return gpu_frame{d, n};
}

/* Decodes one frame's code stream d[0..n) into cells[rows * columns]. */
void decode_frame(const Uint8 *d, uint64_t n, const dh_dicom_image &img, const char *codec,
                  uint32_t frame, uint32_t threads, uint16_t *cells)
{
    const gpu_frame checked = checked_code_stream(d, n, img, codec, frame);
    d = checked.bytes;
    n = checked.length;

    std::string errors;
    std::unique_ptr<opj_codec_t, opj_codec_free> c(opj_create_decompress(OPJ_CODEC_J2K));
    if (!c)
        throw std::bad_alloc();
    opj_set_error_handler(c.get(), keep_error, &errors);
    opj_set_warning_handler(c.get(), opj_ignore_message, nullptr);
    opj_set_info_handler(c.get(), opj_ignore_message, nullptr);
    opj_dparameters_t parameters;
    opj_set_default_decoder_parameters(&parameters);
    /* One worker thread (unless the caller asked for more) decodes while the caller waits,
     * whatever OPJ_NUM_THREADS says. Not zero threads: OpenJPEG 2.5.0 then sets up its
     * code-block decoder afresh for every block, which made HTJ2K 3 to 4 times slower here
     * (docs/performance.md). */
    const int workers = threads > 1 ? (int)threads : 1;
    if (!opj_setup_decoder(c.get(), &parameters) ||
        !opj_decoder_set_strict_mode(c.get(), OPJ_TRUE) ||
        (opj_has_thread_support() && !opj_codec_set_threads(c.get(), workers)))
        fail(DH_DICOM_ERR_INTERNAL, "%s frame %u: OpenJPEG's decoder cannot be set up%s%s", codec,
             frame + 1, errors.empty() ? "" : ": ", errors.c_str());

    memory_source source{d, n, 0};
    std::unique_ptr<opj_stream_t, opj_stream_free> s(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, 1));
    if (!s)
        throw std::bad_alloc();
    opj_stream_set_user_data(s.get(), &source, nullptr);
    opj_stream_set_user_data_length(s.get(), n);
    opj_stream_set_read_function(s.get(), read_source);
    opj_stream_set_skip_function(s.get(), skip_source);
    opj_stream_set_seek_function(s.get(), seek_source);

    opj_image_t *raw = nullptr;
    const bool header = opj_read_header(s.get(), c.get(), &raw);
    std::unique_ptr<opj_image_t, opj_image_free> image(raw);
    if (!header || !image)
        fail(DH_DICOM_ERR_MALFORMED, "%s frame %u: unreadable code stream header: %s", codec,
             frame + 1, errors.empty() ? "OpenJPEG gave no reason" : errors.c_str());
    if (!opj_decode(c.get(), s.get(), image.get()) || !opj_end_decompress(c.get(), s.get()))
        fail(DH_DICOM_ERR_MALFORMED, "%s frame %u: corrupt code stream: %s", codec, frame + 1,
             errors.empty() ? "OpenJPEG gave no reason" : errors.c_str());
    const opj_image_comp_t *comp = image->numcomps == 1 ? &image->comps[0] : nullptr;
    if (comp == nullptr || comp->data == nullptr || comp->w != img.format.columns ||
        comp->h != img.format.rows)
        fail(DH_DICOM_ERR_MALFORMED, "%s frame %u decoded to something other than one %ux%u plane",
             codec, frame + 1, img.format.columns, img.format.rows);
    const size_t count = (size_t)img.format.rows * img.format.columns;
    for (size_t i = 0; i < count; i++)
        cells[i] = (uint16_t)(uint32_t)comp->data[i]; /* the low 16 bits, two's complement */
}

bool is_htj2k(const dh_dicom_image &img)
{
    return strncmp(img.transfer_syntax_uid, "1.2.840.10008.1.2.4.20", 22) == 0;
}

} // namespace

void decode_jpeg2000(DcmPixelSequence &seq, const dh_dicom_image &img, uint32_t threads,
                     uint16_t *cells)
{
    const frame_marker &marker = is_htj2k(img) ? soc_siz_htj2k : soc_siz_j2k;
    const std::vector<fragment> items = fragment_list(seq);
    const std::vector<size_t> starts = frame_starts(items, img.frames, marker);
    const size_t frame_cells = (size_t)img.format.rows * img.format.columns;
    std::vector<Uint8> joined;
    for (uint32_t f = 0; f < img.frames; f++) {
        join_fragments(items, starts[f], starts[f + 1], joined);
        decode_frame(joined.data(), joined.size(), img, marker.codec, f, threads,
                     cells + f * frame_cells);
    }
}

std::vector<gpu_frame> jpeg2000_gpu_frames(DcmPixelSequence &seq, const dh_dicom_image &img,
                                           std::vector<std::vector<Uint8>> &joined,
                                           std::string &reason)
{
    const frame_marker &marker = is_htj2k(img) ? soc_siz_htj2k : soc_siz_j2k;
    const std::vector<fragment> items = fragment_list(seq);
    const std::vector<size_t> starts = frame_starts(items, img.frames, marker);
    joined.assign(img.frames, {});
    std::vector<gpu_frame> frames(img.frames);
    for (uint32_t f = 0; f < img.frames; f++) {
        const Uint8 *d;
        uint64_t n;
        if (starts[f + 1] - starts[f] == 1 && items[starts[f]].bytes != nullptr) {
            d = items[starts[f]].bytes; /* one fragment: read in place, no copy */
            n = items[starts[f]].length;
        } else {
            join_fragments(items, starts[f], starts[f + 1], joined[f]);
            d = joined[f].data();
            n = joined[f].size();
        }
        frames[f] = checked_code_stream(d, n, img, marker.codec, f);
        /* A stream cut short keeps no EOC: OpenJPEG's strict mode refuses it, which a GPU
         * decoder that filled in the missing part would not. */
        const gpu_frame &c = frames[f];
        if (c.length < 2 || c.bytes[c.length - 2] != 0xff || c.bytes[c.length - 1] != 0xd9) {
            reason = "frame " + std::to_string(f + 1) + " ends without an EOC marker";
            return {};
        }
    }
    return frames;
}

void decode_jpeg2000_frame(const gpu_frame &frame, const dh_dicom_image &img, uint32_t index,
                           uint16_t *cells)
{
    const frame_marker &marker = is_htj2k(img) ? soc_siz_htj2k : soc_siz_j2k;
    decode_frame(frame.bytes, frame.length, img, marker.codec, index, 1, cells);
}

bool decode_jpeg2000_gpu(DcmPixelSequence &seq, const dh_dicom_image &img, uint16_t *cells,
                         std::string &reason)
{
    std::vector<std::vector<Uint8>> joined;
    const std::vector<gpu_frame> frames = jpeg2000_gpu_frames(seq, img, joined, reason);
    return !frames.empty() && gpu_decode_jpeg2000(frames, img, cells, reason);
}

} // namespace dh_dicom_impl
