#include <stdio.h>
#include <stdlib.h>
#include "ring_buffer.h"

#define RB_MIN_CAPACITY 16

static int rb_debug = 0;

struct ring_buffer {
    char *data;
    size_t head;
    size_t tail;
    size_t capacity;
};

typedef struct rb_stats {
    size_t writes;
    size_t reads;
} rb_stats_t;

struct ring_buffer *rb_create(size_t capacity)
{
    struct ring_buffer *rb = malloc(sizeof(*rb));
    if (!rb)
        return NULL;
    if (capacity < RB_MIN_CAPACITY)
        capacity = RB_MIN_CAPACITY;
    rb->data = calloc(capacity, 1);
    rb->head = rb->tail = 0;
    rb->capacity = capacity;
    return rb;
}

static size_t rb_used(const struct ring_buffer *rb)
{
    return (rb->head + rb->capacity - rb->tail) % rb->capacity;
}

/* Copy len bytes in, or nothing at all if they do not fit. */
int rb_write(struct ring_buffer *rb, const char *src, size_t len, rb_stats_t *stats)
{
    size_t i;
    if (len > rb->capacity - rb_used(rb) - 1) {
        if (rb_debug)
            fprintf(stderr, "rb_write: %zu bytes do not fit\n", len);
        return -1;
    }
    for (i = 0; i < len; i++) {
        rb->data[rb->head] = src[i];
        rb->head = (rb->head + 1) % rb->capacity;
    }
    if (stats)
        stats->writes += len;
    if (rb_debug)
        fprintf(stderr, "rb_write: %zu bytes, %zu used\n", len, rb_used(rb));
    return (int)len;
}

void rb_free(struct ring_buffer *rb)
{
    if (!rb)
        return;
    free(rb->data);
    free(rb);
}
