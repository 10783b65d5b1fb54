/*  tb_writer — a TensorBoard event file of scalar and image summaries
    (`events.out.tfevents.*`).

    Each record is one tensorflow.Event (hooks/tb_event.proto, encoded by protobuf-c) framed as
    a TFRecord: uint64 length, uint32 masked CRC32C of the length bytes, the data, uint32 masked
    CRC32C of the data (little endian). The first record holds file_version "brain.Event:2".
    Every record is flushed, so TensorBoard can read the file while the job runs.

    A failed write (disk full) is logged once with pf_error, naming the file, and closes the
    writer: later calls return -1 and do nothing, since a torn record makes the rest of the file
    unreadable anyway. The caller goes on with its other work.
*/
#ifndef PF_TB_WRITER_H
#define PF_TB_WRITER_H
#include <stddef.h>
#include <stdint.h>

typedef struct pf_tb_writer pf_tb_writer;

/* Create DIR/events.out.tfevents.<unix time>.<hostname>, TensorFlow's name, and write the
   file_version record. Returns NULL with a message in err when the file cannot be opened. */
pf_tb_writer *pf_tb_writer_new(const char *dir, char *err, size_t errlen);

/* The same with the file path given (appended to when it exists). */
pf_tb_writer *pf_tb_writer_open(const char *path, char *err, size_t errlen);

/* Write one Event with wall_time = now, step, and one scalar (tag, e.g. "train/loss").
   Returns 0, or -1 once the writer has failed (see the top). */
int pf_tb_writer_scalar(pf_tb_writer *self, const char *tag, int64_t step, float value);

/* Write one Event with wall_time = now, step, and one image (tag, e.g. "visual/train"):
   Summary.Image {height, width (pixels), colorspace 3 (RGB), encoded_image_string = the
   png_len bytes of an RGB PNG of that size}. Returns 0, or -1 once the writer has failed. */
int pf_tb_writer_image(pf_tb_writer *self, const char *tag, int64_t step, int height, int width,
                       const uint8_t *png, size_t png_len);

/* The file's path. */
const char *pf_tb_writer_path(const pf_tb_writer *self);

/* 1 once a write has failed, else 0. */
int pf_tb_writer_failed(const pf_tb_writer *self);

/* Close the file and free the writer; nulls *self_p. */
void pf_tb_writer_destroy(pf_tb_writer **self_p);

/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF) of len
   bytes: crc32c("123456789") = 0xE3069283. */
uint32_t pf_crc32c(const void *data, size_t len);
#endif
