/*
 * compose_kernels.c — a pass of the compositor's frame as thread-pool jobs
 * (compose_kernels.h). The scaling itself is scale_kernels.c, the `scale` filter's
 * kernels, so a tile is byte for byte what `scale` makes of the same input.
 */
#include "compose_kernels.h"

#include <string.h>

/* Luma pixels of a plane's rectangle coordinate (all even, so chroma is exact). */
static inline int32_t plane_coordinate(int32_t value, int32_t plane) { return plane > 0 ? value / 2 : value; }

void compose_tile_column_blocks(int32_t width, size_t *luma, size_t *chroma) {
    *luma = scale_column_blocks(width);
    *chroma = scale_column_blocks((width + 1) / 2);
}

void compose_prepare_tile(compose_tile *tile, scale_isa isa) {
    if (tile->src[0] == NULL) return;
    const compose_rect r = tile->rect;
    if (tile->planned_src_width == tile->src_width && tile->planned_src_height == tile->src_height &&
        tile->planned_mode == tile->mode && tile->planned_filter == tile->filter && tile->planned_rect.x == r.x &&
        tile->planned_rect.y == r.y && tile->planned_rect.width == r.width && tile->planned_rect.height == r.height)
        return;
    const scale_geometry g = scale_fit_geometry(tile->mode, (uint32_t)tile->src_width, (uint32_t)tile->src_height,
                                                (uint32_t)r.width, (uint32_t)r.height);
    tile->geometry = g;
    scale_plan_init(&tile->plans[0], g.src_w, g.src_h, g.dst_w, g.dst_h, tile->filter, isa, tile->columns,
                    tile->luma_columns);
    scale_plan_init(&tile->plans[1], (g.src_w + 1) / 2, (g.src_h + 1) / 2, (g.dst_w + 1) / 2, (g.dst_h + 1) / 2,
                    tile->filter, isa, tile->columns ? tile->columns + tile->luma_columns : NULL,
                    tile->chroma_columns);
    tile->planned_src_width = tile->src_width;
    tile->planned_src_height = tile->src_height;
    tile->planned_mode = tile->mode;
    tile->planned_filter = tile->filter;
    tile->planned_rect = r;
}

/* Base items a tile makes: 3 scaled planes and 4 bars of 3 planes, or 3 filled planes. */
#define COMPOSE_ITEMS_PER_TILE 15

size_t compose_item_capacity(int32_t tile_count, int32_t background_rect_count, uint32_t chunk_count) {
    /* Splitting an item of cost c into ceil(c / target) pieces adds at most
     * chunk_count pieces over all items (the costs sum to chunk_count targets). */
    return (size_t)tile_count * COMPOSE_ITEMS_PER_TILE + (size_t)background_rect_count * 3 + chunk_count + 1;
}

/* Relative cost of an item: samples written, plus samples read for a scale (the
 * source rows a band of output rows covers). Fills cost a quarter (memset speed). */
static uint64_t item_cost(const compose_frame *frame, const compose_item *item) {
    const uint64_t rows = (uint64_t)(item->row_end - item->row_begin);
    if (item->kind != COMPOSE_ITEM_SCALE) return rows * (uint64_t)item->width / 4 + 1;
    const scale_plan *plan = &frame->tiles[item->tile].plans[item->plane > 0];
    const uint64_t read = plan->dst_h > 0 ? rows * (uint64_t)plan->src_h / (uint64_t)plan->dst_h : rows;
    return rows * (uint64_t)plan->dst_w + read * (uint64_t)plan->src_w + 1;
}

/* Appends `item` cut into `pieces` row bands (scale bands on the plan's row alignment). */
static void emit(compose_frame *frame, compose_item item, uint64_t target) {
    const uint64_t cost = item_cost(frame, &item);
    uint64_t pieces = target > 0 ? (cost + target - 1) / target : 1;
    if (pieces < 1) pieces = 1;
    const int32_t rows = item.row_end - item.row_begin;
    if (pieces > (uint64_t)rows) pieces = (uint64_t)(rows > 0 ? rows : 1);
    for (uint64_t i = 0; i < pieces && frame->item_count < frame->item_capacity; i++) {
        compose_item piece = item;
        if (item.kind == COMPOSE_ITEM_SCALE) {
            int b, e;
            scale_slice_rows(&frame->tiles[item.tile].plans[item.plane > 0], (uint32_t)pieces, (uint32_t)i, &b, &e);
            piece.row_begin = b;
            piece.row_end = e;
        } else {
            piece.row_begin = item.row_begin + (int32_t)((uint64_t)rows * i / pieces);
            piece.row_end = item.row_begin + (int32_t)((uint64_t)rows * (i + 1) / pieces);
        }
        if (piece.row_end > piece.row_begin) frame->items[frame->item_count++] = piece;
    }
}

/* A rectangle (luma coordinates) of every plane, as fill or background items. */
static void emit_rect(compose_frame *frame, int32_t kind, compose_rect r, const uint8_t value[3], uint64_t target) {
    if (r.width <= 0 || r.height <= 0) return;
    for (int32_t p = 0; p < 3; p++) {
        compose_item item = { .kind = kind, .tile = -1, .plane = p };
        item.row_begin = plane_coordinate(r.y, p);
        item.row_end = plane_coordinate(r.y + r.height, p);
        item.x = plane_coordinate(r.x, p);
        item.width = plane_coordinate(r.width, p);
        item.value = value[p];
        emit(frame, item, target);
    }
}

/* Every item of a pass, uncut (target 0 means "do not cut"), or cut for `target`. */
static void emit_pass(compose_frame *frame, int32_t pass, uint64_t target) {
    if (pass == 0)
        for (int32_t i = 0; i < frame->background_rect_count; i++)
            emit_rect(frame, COMPOSE_ITEM_BACKGROUND, frame->background_rects[i], frame->background_value, target);
    for (int32_t t = 0; t < frame->tile_count; t++) {
        const compose_tile *tile = &frame->tiles[t];
        if (tile->pass != pass || tile->rect.width <= 0 || tile->rect.height <= 0) continue;
        const compose_rect r = tile->rect;
        if (tile->src[0] == NULL) {
            emit_rect(frame, COMPOSE_ITEM_FILL, r, tile->fill, target);
            continue;
        }
        const scale_geometry g = tile->geometry;
        /* the bars: above and below the picture, then beside it */
        emit_rect(frame, COMPOSE_ITEM_FILL, (compose_rect){ r.x, r.y, r.width, g.dst_y }, tile->fill, target);
        emit_rect(frame, COMPOSE_ITEM_FILL,
                  (compose_rect){ r.x, r.y + g.dst_y + g.dst_h, r.width, r.height - g.dst_y - g.dst_h }, tile->fill,
                  target);
        emit_rect(frame, COMPOSE_ITEM_FILL, (compose_rect){ r.x, r.y + g.dst_y, g.dst_x, g.dst_h }, tile->fill, target);
        emit_rect(frame, COMPOSE_ITEM_FILL,
                  (compose_rect){ r.x + g.dst_x + g.dst_w, r.y + g.dst_y, r.width - g.dst_x - g.dst_w, g.dst_h },
                  tile->fill, target);
        for (int32_t p = 0; p < 3; p++) {
            compose_item item = { .kind = COMPOSE_ITEM_SCALE, .tile = t, .plane = p };
            item.row_begin = 0;
            item.row_end = tile->plans[p > 0].dst_h;
            emit(frame, item, target);
        }
    }
}

uint32_t compose_schedule(compose_frame *frame, int32_t pass, uint32_t chunk_count) {
    if (chunk_count < 1) chunk_count = 1;
    if (chunk_count > frame->chunk_capacity) chunk_count = frame->chunk_capacity;
    /* First the whole items, to learn the total; then again, cut for the target. */
    frame->item_count = 0;
    emit_pass(frame, pass, 0);
    uint64_t total = 0;
    for (size_t i = 0; i < frame->item_count; i++) total += item_cost(frame, &frame->items[i]);
    frame->chunk_count = 0;
    if (frame->item_count == 0) return 0;
    const uint64_t target = (total + chunk_count - 1) / chunk_count;
    frame->item_count = 0;
    emit_pass(frame, pass, target);
    /* Contiguous runs of items, a new job each time the running cost passes a multiple
     * of the target. */
    uint32_t chunks = 0;
    uint64_t running = 0;
    frame->chunk_starts[0] = 0;
    for (size_t i = 0; i < frame->item_count; i++) {
        if (running >= (uint64_t)(chunks + 1) * target && chunks + 1 < chunk_count) {
            chunks++;
            frame->chunk_starts[chunks] = (uint32_t)i;
        }
        running += item_cost(frame, &frame->items[i]);
    }
    chunks++;
    frame->chunk_starts[chunks] = (uint32_t)frame->item_count;
    frame->chunk_count = chunks;
    return chunks;
}

static void fill_rows(uint8_t *plane, int32_t stride, const compose_item *item) {
    for (int32_t y = item->row_begin; y < item->row_end; y++)
        memset(plane + (ptrdiff_t)y * stride + item->x, item->value, (size_t)item->width);
}

void compose_run_chunk(void *context, uint32_t index) {
    compose_frame *frame = context;
    if (index >= frame->chunk_count) return;
    uint8_t *rows = frame->row_buffers + (size_t)index * frame->row_buffer_bytes;
    for (uint32_t i = frame->chunk_starts[index]; i < frame->chunk_starts[index + 1]; i++) {
        const compose_item *item = &frame->items[i];
        const int32_t p = item->plane;
        uint8_t *const dst = frame->dst[p];
        const int32_t dst_stride = frame->dst_stride[p];
        switch (item->kind) {
        case COMPOSE_ITEM_SCALE: {
            const compose_tile *tile = &frame->tiles[item->tile];
            const scale_geometry *g = &tile->geometry;
            const uint8_t *src = tile->src[p] + (ptrdiff_t)plane_coordinate(g->src_y, p) * tile->src_stride[p] +
                                 plane_coordinate(g->src_x, p);
            uint8_t *out = dst + (ptrdiff_t)plane_coordinate(tile->rect.y + g->dst_y, p) * dst_stride +
                           plane_coordinate(tile->rect.x + g->dst_x, p);
            scale_plane_rows(&tile->plans[p > 0], src, tile->src_stride[p], out, dst_stride, item->row_begin,
                             item->row_end, rows);
            break;
        }
        case COMPOSE_ITEM_BACKGROUND:
            if (frame->background[0] != NULL) {
                const uint8_t *src = frame->background[p];
                const int32_t src_stride = frame->background_stride[p];
                for (int32_t y = item->row_begin; y < item->row_end; y++)
                    memcpy(dst + (ptrdiff_t)y * dst_stride + item->x, src + (ptrdiff_t)y * src_stride + item->x,
                           (size_t)item->width);
                break;
            }
            fill_rows(dst, dst_stride, item);
            break;
        default:
            fill_rows(dst, dst_stride, item);
            break;
        }
    }
}

void compose_draw_border(compose_frame *frame, compose_rect r, int32_t thickness, const uint8_t color[3]) {
    if (thickness <= 0 || r.width <= 0 || r.height <= 0) return;
    if (thickness * 2 > r.width) thickness = r.width / 2 & ~1;
    if (thickness * 2 > r.height) thickness = r.height / 2 & ~1;
    const compose_rect sides[4] = {
        { r.x, r.y, r.width, thickness },
        { r.x, r.y + r.height - thickness, r.width, thickness },
        { r.x, r.y + thickness, thickness, r.height - 2 * thickness },
        { r.x + r.width - thickness, r.y + thickness, thickness, r.height - 2 * thickness },
    };
    for (int s = 0; s < 4; s++)
        for (int32_t p = 0; p < 3; p++) {
            compose_item item = { .kind = COMPOSE_ITEM_FILL, .plane = p, .value = color[p] };
            item.row_begin = plane_coordinate(sides[s].y, p);
            item.row_end = plane_coordinate(sides[s].y + sides[s].height, p);
            item.x = plane_coordinate(sides[s].x, p);
            item.width = plane_coordinate(sides[s].width, p);
            if (item.width > 0) fill_rows(frame->dst[p], frame->dst_stride[p], &item);
        }
}
