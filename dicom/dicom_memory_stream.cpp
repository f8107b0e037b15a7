// SPDX-License-Identifier: MIT
/*
 * dicom_memory_stream.cpp: a DCMTK input stream over a caller's buffer that, unlike DCMTK's own
 * DcmInputBufferStream, hands out stream factories. DCMTK reads an element longer than the read
 * limit by skipping it and keeping a factory to load it later; that skip is where a length
 * longer than the data left is caught ("larger than remaining bytes"). Without a factory DCMTK
 * allocates the declared length first and only then finds the data missing: a 30-byte buffer
 * claiming a 4 GB element cost a 4 GB allocation. With this stream a buffer is read exactly as
 * a file is: lazily, and never trusting a length beyond the bytes that are there.
 */
#include "dicom_internal.h"

#include <cstring>

namespace dh_dicom_impl {

namespace {

/* The bytes from `pos` on: all available at once, never an error. */
class memory_producer : public DcmProducer {
public:
    memory_producer(const unsigned char *data, offile_off_t size, offile_off_t pos)
        : data_(data), size_(size), pos_(pos < size ? pos : size)
    {
    }
    OFBool good() const override { return OFTrue; }
    OFCondition status() const override { return EC_Normal; }
    OFBool eos() override { return pos_ >= size_; }
    offile_off_t avail() override { return size_ - pos_; }
    offile_off_t read(void *buf, offile_off_t buflen) override
    {
        const offile_off_t n = take(buflen);
        if (n > 0)
            memcpy(buf, data_ + pos_, (size_t)n);
        pos_ += n;
        return n;
    }
    offile_off_t skip(offile_off_t skiplen) override
    {
        const offile_off_t n = take(skiplen);
        pos_ += n;
        return n;
    }
    void putback(offile_off_t num) override { pos_ -= (num > pos_) ? pos_ : num; }

private:
    offile_off_t take(offile_off_t want) const
    {
        if (want <= 0)
            return 0;
        return want < size_ - pos_ ? want : size_ - pos_;
    }
    const unsigned char *data_;
    offile_off_t size_, pos_;
};

class memory_stream_factory : public DcmInputStreamFactory {
public:
    memory_stream_factory(const unsigned char *data, offile_off_t size, offile_off_t offset)
        : data_(data), size_(size), offset_(offset)
    {
    }
    DcmInputStream *create() const override;
    DcmInputStreamFactory *clone() const override
    {
        return new memory_stream_factory(data_, size_, offset_);
    }
    /* Read by DCMTK only to tell temporary-file factories apart; a buffer behaves as a file. */
    DcmInputStreamFactoryType ident() const override { return DFT_DcmInputFileStreamFactory; }

private:
    const unsigned char *data_;
    offile_off_t size_, offset_;
};

} // namespace

/* The producer is a member that the base class is given before it is built: the base only
 * keeps the pointer, as DCMTK's own DcmInputFileStream does. */
class memory_stream : public DcmInputStream {
public:
    memory_stream(const unsigned char *data, offile_off_t size, offile_off_t offset)
        : DcmInputStream(&producer_), producer_(data, size, offset), data_(data), size_(size),
          offset_(offset)
    {
    }
    /* No factory once a compression filter (deflate) is installed: positions in the inflated
     * data are not positions in the buffer. */
    DcmInputStreamFactory *newFactory() const override
    {
        if (currentProducer() != &producer_)
            return nullptr;
        return new memory_stream_factory(data_, size_, offset_ + tell());
    }

private:
    memory_producer producer_;
    const unsigned char *data_;
    offile_off_t size_, offset_;
};

DcmInputStream *memory_stream_factory::create() const
{
    return new memory_stream(data_, size_, offset_);
}

std::unique_ptr<DcmInputStream> open_memory_stream(const void *data, size_t size)
{
    return std::unique_ptr<DcmInputStream>(
        new memory_stream(static_cast<const unsigned char *>(data), (offile_off_t)size, 0));
}

} // namespace dh_dicom_impl
