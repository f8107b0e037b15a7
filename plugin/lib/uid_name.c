// SPDX-License-Identifier: MIT
/*
 * uid_name.c: name-based UIDs for derived objects: a UUID version 5 (RFC 9562: SHA-1 of a
 * namespace and a name) written as "2.25.<decimal>", the form PS3.5 B.2 gives for UUID-derived
 * UIDs. The namespace is dicomhist's own root UUID (the one behind DH_DICOM_UID_ROOT), so the
 * same work on the same source always gets the same UID, and different work a different one.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "uid_name.h"

/* 66a5b7be-0522-4f6a-b2c5-58ceb2155a00 = 136441711287616915122970018367938058752 */
static const unsigned char namespace_uuid[16] = {0x66, 0xa5, 0xb7, 0xbe, 0x05, 0x22, 0x4f, 0x6a,
                                                 0xb2, 0xc5, 0x58, 0xce, 0xb2, 0x15, 0x5a, 0x00};

int dh_uid_from_name(char uid[65], const char *const *parts, size_t count)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha1(), NULL) &&
             EVP_DigestUpdate(md, namespace_uuid, sizeof namespace_uuid);
    /* Parts are joined with a NUL, which no part contains, so ("ab","c") differs from ("a","bc"). */
    for (size_t i = 0; ok && i < count; i++)
        ok = EVP_DigestUpdate(md, parts[i], strlen(parts[i]) + (i + 1 < count));
    ok = ok && EVP_DigestFinal_ex(md, digest, &len) && len >= 16;
    EVP_MD_CTX_free(md);
    if (!ok) {
        uid[0] = '\0';
        return -1;
    }
    digest[6] = (unsigned char)((digest[6] & 0x0f) | 0x50); /* version 5 */
    digest[8] = (unsigned char)((digest[8] & 0x3f) | 0x80); /* RFC variant */
    unsigned __int128 v = 0;
    for (int i = 0; i < 16; i++)
        v = v << 8 | digest[i];
    char digits[40];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    memcpy(uid, "2.25.", 5);
    for (int i = 0; i < n; i++)
        uid[5 + i] = digits[n - 1 - i];
    uid[5 + n] = '\0';
    return 0;
}
