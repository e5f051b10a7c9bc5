/* libreticle.so is the static library's objects, whole (CMake needs a
 * source file for a library target). */
typedef int rtl_shared_library_unit;
