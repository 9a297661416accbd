#include <png.h>
#include <setjmp.h>
#include <string.h>

/* libpng's user limits, which its simplified API (png_image_*) offers no way to set, and
 * its low-level API reports through longjmp, which Swift cannot call: so this check lives
 * here, in C. It reads the header and every chunk before the image data with the limits
 * set, and the caller decodes with the simplified API only if libpng accepted. */

typedef struct rawfx_png_memory {
    const unsigned char *data;
    size_t size;
    size_t offset;
} rawfx_png_memory;

static void rawfx_png_read_memory(png_structp png, png_bytep out, size_t length) {
    rawfx_png_memory *memory = (rawfx_png_memory *)png_get_io_ptr(png);
    if (length > memory->size - memory->offset) png_error(png, "the file ends early");
    memcpy(out, memory->data + memory->offset, length);
    memory->offset += length;
}

static void rawfx_png_error(png_structp png, png_const_charp message) {
    char *buffer = (char *)png_get_error_ptr(png);
    strncpy(buffer, message, 255);
    buffer[255] = '\0';
    png_longjmp(png, 1);
}

static void rawfx_png_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

/* Returns 1 when libpng accepts the PNG in `data` under these limits (png_set_user_limits:
 * width and height at most max_side; png_set_chunk_cache_max: at most max_cached ancillary
 * chunks; png_set_chunk_malloc_max: no chunk, nor decompressed chunk data, above
 * max_chunk_bytes; benign errors are errors), else 0 with libpng's message in `error`
 * (256 bytes). */
static inline int rawfx_png_check_limits(const unsigned char *data, size_t size, unsigned max_side,
                                         unsigned max_cached, size_t max_chunk_bytes, char *error) {
    error[0] = '\0';
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, error, rawfx_png_error, rawfx_png_warning);
    if (png == NULL) {
        strcpy(error, "libpng could not start");
        return 0;
    }
    png_infop info = png_create_info_struct(png);
    rawfx_png_memory memory = { data, size, 0 };
    volatile int accepted = 0;
    if (info != NULL && setjmp(png_jmpbuf(png)) == 0) {
        png_set_user_limits(png, max_side, max_side);
        png_set_chunk_cache_max(png, max_cached);
        png_set_chunk_malloc_max(png, max_chunk_bytes);
        png_set_benign_errors(png, 0);
        png_set_read_fn(png, &memory, rawfx_png_read_memory);
        png_read_info(png, info);
        accepted = 1;
    } else if (info == NULL) {
        strcpy(error, "libpng could not start");
    }
    png_destroy_read_struct(&png, info != NULL ? &info : NULL, NULL);
    return accepted;
}
