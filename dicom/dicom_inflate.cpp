// SPDX-License-Identifier: MIT
/*
 * dicom_inflate.cpp: the dataset of a Deflated Explicit VR Little Endian file, inflated here
 * rather than by DCMTK. DCMTK reads a deflated dataset through a zlib filter, where no value can
 * be deferred, so it allocates whatever length an element claims before finding the bytes
 * missing (a 40 KB file claiming a 1.5 GB element cost 1.5 GB). Inflated here, memory grows
 * only with the bytes that really come out, and DCMTK then reads plain explicit little endian
 * from memory, where long values are deferred and their lengths checked.
 */
#include "dicom_internal.h"

#include <zlib.h>

namespace dh_dicom_impl {

/* The standard's deflate is raw (RFC 1951); a zlib header (RFC 1950), which some writers add,
 * is accepted too. */
static bool inflate_with(const unsigned char *data, size_t size, int window_bits,
                         std::string &out)
{
    z_stream z{};
    if (inflateInit2(&z, window_bits) != Z_OK)
        throw std::bad_alloc();
    out.clear();
    size_t fed = 0;
    int rc = Z_OK;
    unsigned char chunk[64 * 1024];
    while (rc == Z_OK) {
        if (z.avail_in == 0 && fed < size) {
            const size_t n = size - fed < 0x40000000u ? size - fed : 0x40000000u;
            z.next_in = const_cast<unsigned char *>(data + fed);
            z.avail_in = (uInt)n;
            fed += n;
        }
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(reinterpret_cast<const char *>(chunk), sizeof chunk - z.avail_out);
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && fed == size)
            break; /* the input ended before the stream did */
        if (rc == Z_BUF_ERROR)
            rc = Z_OK; /* no progress possible this round only */
    }
    inflateEnd(&z);
    return rc == Z_STREAM_END;
}

void inflate_dataset(const unsigned char *data, size_t size, std::string &out)
{
    if (inflate_with(data, size, -MAX_WBITS, out) || inflate_with(data, size, MAX_WBITS, out))
        return;
    fail(DH_DICOM_ERR_MALFORMED, "deflated dataset is corrupt or truncated: it does not inflate");
}

} // namespace dh_dicom_impl
