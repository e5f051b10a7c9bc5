/* See fifo.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/fifo.h"
#include "util/thread.h"

int rtl_fifo_init(struct rtl_fifo *f, size_t item_size, size_t depth, void (*run)(void *ctx, void *item),
		  void (*start)(void *ctx), void *ctx)
{
	*f = (struct rtl_fifo){ .run = run, .start = start, .ctx = ctx, .item_size = item_size, .depth = depth };
	if (!(f->items = malloc(item_size * depth)))
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->more, NULL);
	pthread_cond_init(&f->room, NULL);
	return 0;
}

static void *worker(void *arg)
{
	struct rtl_fifo *f = arg;
	if (f->start)
		f->start(f->ctx);
	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (!f->len && !f->closing)
			pthread_cond_wait(&f->more, &f->lock);
		if (!f->len)
			break;
		/* the slot stays taken while its item runs: DEPTH bounds both */
		void *item = f->items + f->head * f->item_size;
		pthread_mutex_unlock(&f->lock);
		f->run(f->ctx, item);
		pthread_mutex_lock(&f->lock);
		f->head = (f->head + 1) % f->depth;
		f->len--;
		pthread_cond_signal(&f->room);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

void rtl_fifo_put(struct rtl_fifo *f, const void *item)
{
	if (!f->started && !rtl_thread_start(&f->thread, worker, f))
		f->started = true;
	if (!f->started) {
		unsigned char copy[f->item_size];
		memcpy(copy, item, f->item_size);
		f->run(f->ctx, copy);
		return;
	}
	pthread_mutex_lock(&f->lock);
	while (f->len == f->depth)
		pthread_cond_wait(&f->room, &f->lock);
	memcpy(f->items + (f->head + f->len) % f->depth * f->item_size, item, f->item_size);
	f->len++;
	pthread_cond_signal(&f->more);
	pthread_mutex_unlock(&f->lock);
}

void rtl_fifo_close(struct rtl_fifo *f)
{
	if (!f->started)
		return;
	pthread_mutex_lock(&f->lock);
	f->closing = true;
	pthread_cond_signal(&f->more);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	f->started = false;
	f->closing = false;
}

void rtl_fifo_destroy(struct rtl_fifo *f)
{
	if (!f->items)
		return;
	rtl_fifo_close(f);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->more);
	pthread_cond_destroy(&f->room);
	free(f->items);
	f->items = NULL;
}
