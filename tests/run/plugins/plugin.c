/* The shared object dlopen.c loads. */
__attribute__((noinline)) long plugin_square(long x) { return x * x + 1; }
