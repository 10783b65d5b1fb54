/*  fuzz_msg — libFuzzer target for pf_msg_decode (proto/codec.c), every message type.

    Input: byte 0 picks `expect` (byte % PF_MSG_COUNT: 0 = accept any type, else only that
    type), the rest is the header frame. Besides the sanitizers' checks, a decoded message must
    survive a round trip: pf_msg_encode accepts it (decode validated it, so encode refusing it
    would be a bound the two disagree about) and decoding that encoding gives a message that
    encodes to the same bytes.
*/
#include "proto/proto.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    int expect = data[0] % PF_MSG_COUNT;
    static pf_msg m, m2;                /* ~30 KiB each (batch indices): keep off the stack */
    char err[256];
    if (pf_msg_decode(data + 1, size - 1, expect, &m, err, sizeof err) != 0) {
        if (!err[0])
            abort();                    /* a rejection must say why */
        return 0;
    }
    if (expect && m.type != expect)
        abort();
    void *enc = NULL, *enc2 = NULL;
    size_t len = 0, len2 = 0;
    if (pf_msg_encode(&m, &enc, &len) != 0) {
        fprintf(stderr, "fuzz_msg: decoded %s does not encode\n", pf_msg_type_name(m.type));
        abort();
    }
    if (pf_msg_decode(enc, len, m.type, &m2, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_msg: re-decode of %s failed: %s\n", pf_msg_type_name(m.type), err);
        abort();
    }
    if (pf_msg_encode(&m2, &enc2, &len2) != 0 || len2 != len || memcmp(enc, enc2, len) != 0) {
        fprintf(stderr, "fuzz_msg: %s round trip changed the encoding\n",
                pf_msg_type_name(m.type));
        abort();
    }
    free(enc);
    free(enc2);
    pf_msg_clear(&m);
    pf_msg_clear(&m2);
    return 0;
}
