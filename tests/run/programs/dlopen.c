/* A shared object loaded with dlopen after start-up, its functions called
 * through dlsym pointers; then unloaded. argv[1] is the plugin's path. */
#include <dlfcn.h>
#include <stdio.h>

/* Loads, calls, unloads, twice: the second load may land where the first
 * was, and its calls must still be counted. */
int main(int argc, char **argv)
{
	long s = 0;
	for (int round = 0; round < 2; round++) {
		void *h = dlopen(argc > 1 ? argv[1] : "./plugin.so", RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		long (*f)(long) = (long (*)(long))dlsym(h, "plugin_square");
		for (long i = 0; i < 1000; i++)
			s += f(i);
		dlclose(h);
	}
	printf("plugin_square calls 2000 sum %ld\n", s);
	return 0;
}
