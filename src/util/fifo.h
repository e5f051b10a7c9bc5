/* A bounded queue of fixed-size items that one worker thread runs in the
 * order they were put: the stages of memory tracing (records expanded,
 * then simulated) each on a CPU of their own. */
#ifndef RETICLE_UTIL_FIFO_H
#define RETICLE_UTIL_FIFO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct rtl_fifo {
	/* run for each item, in the worker (or in the caller when no thread
	 * could start); START once in the worker before its first item */
	void (*run)(void *ctx, void *item);
	void (*start)(void *ctx);
	void *ctx;
	unsigned char *items;
	size_t item_size, depth, head, len;
	pthread_t thread;
	bool started, closing;
	pthread_mutex_t lock;
	pthread_cond_t more, room;
};

/* DEPTH items of ITEM_SIZE bytes at most wait (the one being run among
 * them). Returns 0 or -ENOMEM. */
int rtl_fifo_init(struct rtl_fifo *f, size_t item_size, size_t depth, void (*run)(void *ctx, void *item),
		  void (*start)(void *ctx), void *ctx);
/* ITEM (copied) to the worker, started on the first put; waits while the
 * queue is full. */
void rtl_fifo_put(struct rtl_fifo *f, const void *item);
/* Every item put so far run, and the worker gone (a later put starts
 * another). */
void rtl_fifo_close(struct rtl_fifo *f);
void rtl_fifo_destroy(struct rtl_fifo *f);

#endif
