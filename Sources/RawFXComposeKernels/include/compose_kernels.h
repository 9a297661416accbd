/*
 * compose_kernels.h — the compositor's frame: many I420 pictures scaled into the
 * tiles of one canvas, and the canvas's background, cut into jobs for the host's
 * thread pool (compose_kernels.c).
 *
 * The Swift compositor (Sources/RawFXCompose) decides what is on screen; this file
 * only draws it. Per output frame the compose thread fills each tile's source
 * (planes, strides, size) and calls compose_prepare_tile, which re-plans the scale
 * only when the geometry changed; compose_schedule then cuts one pass (tiles that do
 * not overlap, plus the background in pass 0) into `chunk_count` jobs of about equal
 * cost, and compose_run_chunk runs one job: a thread-pool job function
 * (rawfx_slice_job). Every input pixel is read once, straight from the input's
 * planes, and every output pixel written once per pass that covers it.
 *
 * Nothing allocates here: the caller owns every array (compose_frame's capacities).
 * Symbols are hidden: linked into the engine only.
 */
#ifndef RAWFX_COMPOSE_KERNELS_H
#define RAWFX_COMPOSE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "scale_kernels.h"

#define COMPOSE_HIDDEN __attribute__((visibility("hidden")))

/* A rectangle of the canvas in luma pixels; every field even. */
typedef struct compose_rect {
    int32_t x, y, width, height;
} compose_rect;

/* One tile: where it goes, what it shows and how. The source fields are set per
 * frame by the compose thread; the plan fields belong to compose_prepare_tile. */
typedef struct compose_tile {
    /* set by the caller */
    compose_rect rect;             /* in the canvas */
    int32_t mode;                  /* SCALE_MODE_FIT (contain) or SCALE_MODE_FILL (cover), or STRETCH */
    int32_t filter;                /* SCALE_FILTER_* */
    int32_t pass;                  /* tiles of one pass never overlap */
    const uint8_t *src[3];         /* NULL: no picture, the tile is filled with `fill` */
    int32_t src_stride[3];
    int32_t src_width, src_height; /* any size >= 2 (odd allowed) */
    uint8_t fill[3];               /* Y, U, V of the bars and of a tile with no picture */
    uint8_t reserved[1];
    /* compose_prepare_tile's */
    int32_t planned_src_width, planned_src_height, planned_mode, planned_filter;
    compose_rect planned_rect;
    scale_geometry geometry;       /* in tile coordinates */
    scale_plan plans[2];           /* luma, chroma */
    scale_column_block *columns;   /* caller's storage: luma_columns + chroma_columns blocks */
    size_t luma_columns, chroma_columns;
} compose_tile;

/* One piece of work: rows of one plane of one tile's picture, or a rectangle of a
 * plane filled with a value or copied from the background picture. */
typedef struct compose_item {
    int32_t kind;                  /* COMPOSE_ITEM_* */
    int32_t tile;                  /* scale: index into tiles */
    int32_t plane;                 /* 0 Y, 1 U, 2 V */
    int32_t row_begin, row_end;    /* scale: output rows of the plane's plan; fill: rows of the rect */
    int32_t x, width;              /* fill: columns, in the plane's samples */
    uint8_t value;                 /* fill */
    uint8_t reserved[3];
} compose_item;

enum { COMPOSE_ITEM_SCALE = 0, COMPOSE_ITEM_FILL = 1, COMPOSE_ITEM_BACKGROUND = 2 };

typedef struct compose_frame {
    /* the canvas */
    uint8_t *dst[3];
    int32_t dst_stride[3];
    int32_t width, height;
    /* the background: a colour, or a canvas-sized picture when background[0] is set */
    uint8_t background_value[3];
    const uint8_t *background[3];
    int32_t background_stride[3];
    /* the canvas minus every tile's rectangle (the caller's, from the layout) */
    const compose_rect *background_rects;
    int32_t background_rect_count;
    compose_tile *tiles;
    int32_t tile_count;
    /* jobs: compose_schedule fills them */
    compose_item *items;
    size_t item_capacity;
    size_t item_count;
    uint32_t *chunk_starts;        /* chunk_count + 1 entries */
    uint32_t chunk_capacity;
    uint32_t chunk_count;
    /* one row buffer per chunk, of row_buffer_bytes (64-byte aligned) */
    uint8_t *row_buffers;
    size_t row_buffer_bytes;
} compose_frame;

/* Column blocks a tile needs for a canvas `width` wide (luma, chroma). */
COMPOSE_HIDDEN void compose_tile_column_blocks(int32_t width, size_t *luma, size_t *chroma);

/* Re-plans the tile's scale when its source size, rectangle, mode or filter changed
 * (no allocation). A tile with no source keeps its last plan. Any thread. */
COMPOSE_HIDDEN void compose_prepare_tile(compose_tile *tile, scale_isa isa);

/* Items a pass can need at most, for `chunk_count` chunks: what the caller allocates. */
COMPOSE_HIDDEN size_t compose_item_capacity(int32_t tile_count, int32_t background_rect_count, uint32_t chunk_count);

/* Cuts pass `pass` (its tiles; the background too when pass is 0) into at most
 * `chunk_count` jobs of about equal cost. Returns the number of jobs (0: nothing to
 * draw). Prepare every tile first. */
COMPOSE_HIDDEN uint32_t compose_schedule(compose_frame *frame, int32_t pass, uint32_t chunk_count);

/* Runs job `index` of the last schedule: a rawfx_slice_job with the frame as context.
 * Jobs of one schedule write disjoint pixels; each uses its own row buffer. */
COMPOSE_HIDDEN void compose_run_chunk(void *frame, uint32_t index);

/* Draws a border `thickness` pixels wide (even) inside `rect`, after the passes. */
COMPOSE_HIDDEN void compose_draw_border(compose_frame *frame, compose_rect rect, int32_t thickness,
                                        const uint8_t color[3]);

#endif /* RAWFX_COMPOSE_KERNELS_H */
