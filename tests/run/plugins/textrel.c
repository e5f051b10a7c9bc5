/* Non-PIC code in a shared object (-fno-pic, -z notext): the loader writes
 * absolute addresses into its text (DT_TEXTREL), so the loaded text is not
 * the file's. */
static long table[64];

long plugin_square(long x)
{
	table[x & 63] += x;
	return x * x + (table[x & 63] < 0);
}
