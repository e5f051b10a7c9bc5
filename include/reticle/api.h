/* What libreticle exports: the functions declared with RTL_API in
 * include/reticle/, and nothing else (the library is built with hidden
 * visibility; the CLI exports the same set to the plug-ins it loads). */
#ifndef RETICLE_API_H
#define RETICLE_API_H

#if defined(__GNUC__)
#define RTL_API __attribute__((visibility("default")))
#else
#define RTL_API
#endif

#endif
