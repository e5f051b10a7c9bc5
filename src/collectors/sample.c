/* sample: statistical samples of every thread and process with their call
 * stacks (perf_event; src/sample/). It plans no probes: the session starts
 * the sampler when this collector is chosen, and alone it instruments
 * nothing, so the program runs at native speed but for the samples. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

const struct rtl_collector collector_sample = {
	.name = "sample",
	.summary = "where time goes: samples with call stacks (perf_event; --freq, --event)",
};
