// SPDX-License-Identifier: MIT
/*
 * dicom_codecs.cpp: the once-per-process set-up of DCMTK: the RLE and JPEG (baseline, extended
 * 12-bit, lossless) decoders, and for the writer the RLE and JPEG lossless encoders, each set
 * registered on first use and never unregistered, because a host process (Orthanc, for one) may
 * be using the same DCMTK codecs itself. JPEG-LS does not go through DCMTK (dicom_jpegls.cpp
 * says why).
 */
#include "dicom_internal.h"

#include "dcmtk/dcmdata/dcrledrg.h"
#include "dcmtk/dcmdata/dcrleerg.h"
#include "dcmtk/dcmjpeg/djdecode.h"
#include "dcmtk/dcmjpeg/djencode.h"
#include "dcmtk/oflog/oflog.h"

#include <mutex>

namespace dh_dicom_impl {

/* DCMTK prints its own warnings and errors to stderr; a library must not print, and every
 * problem reaches the caller through the status and message anyway. Only loggers nobody has
 * configured are quietened, so a host that set its own levels keeps them. */
static void quieten_logger(const char *name)
{
    OFLogger logger = OFLog::getLogger(name);
    if (logger.getLogLevel() == dcmtk::log4cplus::NOT_SET_LOG_LEVEL)
        logger.setLogLevel(OFLogger::OFF_LOG_LEVEL);
}

void codecs_init()
{
    static std::once_flag once;
    std::call_once(once, [] {
        quieten_logger("dcmtk.dcmdata");
        quieten_logger("dcmtk.dcmjpeg");
        dictionary_init();
        DcmRLEDecoderRegistration::registerCodecs();
        DJDecoderRegistration::registerCodecs();
    });
}

void encoders_init()
{
    static std::once_flag once;
    std::call_once(once, [] {
        /* The JPEG encoder renders through dcmimgle, which logs at INFO level by default. */
        for (const char *name : {"dcmtk.dcmdata", "dcmtk.dcmimgle", "dcmtk.dcmjpeg"})
            quieten_logger(name);
        DcmRLEEncoderRegistration::registerCodecs();
        DJEncoderRegistration::registerCodecs();
    });
}

} // namespace dh_dicom_impl
