/* A shared object loaded with dlopen after start-up, its functions called
 * through dlsym pointers; then unloaded. argv[1] is the plugin's path. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "./plugin.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	long (*f)(long) = (long (*)(long))dlsym(h, "plugin_square");
	long s = 0;
	for (long i = 0; i < 1000; i++)
		s += f(i);
	printf("plugin_square calls 1000 sum %ld\n", s);
	dlclose(h);
	return 0;
}
