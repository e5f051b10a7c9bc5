/* A flame graph, drawn here as SVG from the calling-context tree: one box
 * per call path (threads and images merged, as in the folded format), as
 * wide as the exclusive time of the path and of every path below it, on
 * top of its caller's box, callees left to right in the order of their
 * first call. A box's tooltip gives its calls and times; clicking a box
 * zooms to it, clicking the title zooms out (a few lines of script: the
 * picture needs none). Boxes narrower than a tenth of a pixel are left
 * out, as flamegraph.pl does. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "report/cct.h"

enum { WIDTH = 1200, PAD = 10, FRAME_H = 16, TOP = 52, BOTTOM = 12, CHAR_W = 7 };
#define MIN_PX 0.1

/* S (at most MAX characters, the last two ".." when cut; 0: no limit) as
 * XML text: markup escaped, control bytes as '?', invalid UTF-8 as U+FFFD. */
static void xml_text(FILE *out, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t chars = 0, len = 0;
	for (const unsigned char *q = s; *q; len++) {
		int n = *q < 0x80 ? 1 : rtl_utf8_len(q);
		q += n ? n : 1;
	}
	int cut = max && len > max;
	while (*s && (!cut || chars < max - 2)) {
		int n;
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			if (*s < 0x20 || *s == 0x7f)
				fputc('?', out);
			else if (*s < 0x80)
				fputc(*s, out);
			else if ((n = rtl_utf8_len(s))) {
				fwrite(s, 1, (size_t)n, out);
				s += n - 1;
			} else
				fputs("&#xfffd;", out);
		}
		s++;
		chars++;
	}
	if (cut)
		fputs("..", out);
}

/* A warm colour that depends only on the name, so that a function keeps
 * its colour from one graph to the next. */
static void colour(const char *name, int rgb[3])
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * 0x100000001b3ull;
	rgb[0] = 205 + (int)(h % 51);
	rgb[1] = (int)((h >> 16) % 231);
	rgb[2] = (int)((h >> 32) % 56);
}

static const char script[] =
	"<script><![CDATA[\n"
	"var W=%d,P=%d,C=%d,fr=[].slice.call(document.querySelectorAll('g.f'));\n"
	"function num(g,a){return +g.getAttribute('data-'+a);}\n"
	"function fit(g,x,w){var r=g.firstElementChild.nextElementSibling,t=r.nextElementSibling,"
	"n=g.getAttribute('data-n'),k=Math.floor((w-6)/C);\n"
	" r.setAttribute('x',x);r.setAttribute('width',w);t.setAttribute('x',x+3);\n"
	" t.textContent=k<3?'':n.length<=k?n:n.slice(0,k-2)+'..';}\n"
	"function zoom(z){var zx=z?num(z,'x'):0,zw=z?num(z,'w'):1,zd=z?num(z,'d'):-1,e=1e-12,s=W-2*P;\n"
	" fr.forEach(function(g){var x=num(g,'x'),w=num(g,'w'),d=num(g,'d');\n"
	"  if(d<=zd&&x<=zx+e&&x+w>=zx+zw-e){g.style.display='';g.style.opacity=d<zd?0.6:1;fit(g,P,s);}\n"
	"  else if(d>zd&&x>=zx-e&&x+w<=zx+zw+e){g.style.display='';g.style.opacity=1;"
	"fit(g,P+(x-zx)/zw*s,w/zw*s);}\n"
	"  else g.style.display='none';});}\n"
	"fr.forEach(function(g){g.addEventListener('click',function(){zoom(g);});});\n"
	"document.getElementById('title').addEventListener('click',function(){zoom(null);});\n"
	"]]></script>\n";

struct layout {
	double *width;            /* per node: seconds of it and its descendants */
	double *x;                /* where it starts, in seconds from the left */
	double *next;             /* where its next callee starts */
	int *depth;               /* -1: not drawn */
};

/* Widths: own exclusive time plus the callees' (nodes come callers first,
 * so a backward pass adds each finished subtree to its caller). A negative
 * time (a clock that went back) counts as none. */
static double place(const struct cct *t, struct layout *l, int *max_depth)
{
	double total = 0, root_next = 0;
	for (size_t i = 0; i < t->count; i++)
		l->width[i] = t->n[i].exclusive > 0 ? t->n[i].exclusive : 0;
	for (size_t i = t->count; i-- > 0;)
		if (t->n[i].parent != CCT_NONE)
			l->width[t->n[i].parent] += l->width[i];
		else
			total += l->width[i];
	*max_depth = -1;
	for (size_t i = 0; i < t->count; i++) {
		size_t up = t->n[i].parent;
		double *next = up == CCT_NONE ? &root_next : &l->next[up];
		l->x[i] = l->next[i] = *next;
		*next += l->width[i];
		int shown = total > 0 && l->width[i] / total * (WIDTH - 2 * PAD) >= MIN_PX &&
			    (up == CCT_NONE || l->depth[up] >= 0);
		l->depth[i] = !shown ? -1 : up == CCT_NONE ? 0 : l->depth[up] + 1;
		if (l->depth[i] > *max_depth)
			*max_depth = l->depth[i];
	}
	return total;
}

static void frame(FILE *out, const struct cct *t, const struct layout *l, size_t i, double total, int height)
{
	char buf[32];
	const char *name = cct_name(t, i, buf);
	const struct cct_node *n = &t->n[i];
	double frac = l->width[i] / total, px = frac * (WIDTH - 2 * PAD);
	double x = PAD + l->x[i] / total * (WIDTH - 2 * PAD);
	int y = height - BOTTOM - (l->depth[i] + 1) * FRAME_H, rgb[3];
	colour(name, rgb);
	fprintf(out, "<g class=\"f\" data-x=\"%.12g\" data-w=\"%.12g\" data-d=\"%d\" data-n=\"", l->x[i] / total, frac,
		l->depth[i]);
	xml_text(out, name, 0);
	fputs("\"><title>", out);
	xml_text(out, name, 0);
	fprintf(out, " (%s)&#10;%llu calls, %.6g ms in it and below (%.2f%%), %.6g ms itself, %.6g ms inclusive",
		cct_module(t, i), (unsigned long long)n->calls, l->width[i] * 1e3, frac * 100,
		(n->exclusive > 0 ? n->exclusive : 0) * 1e3, n->inclusive * 1e3);
	fprintf(out, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
		"fill=\"rgb(%d,%d,%d)\"/><text x=\"%.2f\" y=\"%d\">",
		x, y, px, FRAME_H - 1, rgb[0], rgb[1], rgb[2], x + 3, y + FRAME_H - 4);
	long fits = (long)((px - 6) / CHAR_W);
	if (fits >= 3)
		xml_text(out, name, (size_t)fits);
	fputs("</text></g>\n", out);
}

int rtl_report_svg(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct cct t;
	int err = cct_load(p, 0, o, &t);
	if (err)
		return err;
	struct layout l = { malloc(t.count * sizeof(double)), malloc(t.count * sizeof(double)),
			    malloc(t.count * sizeof(double)), malloc(t.count * sizeof(int)) };
	if (!l.width || !l.x || !l.next || !l.depth) {
		err = -ENOMEM;
		goto out;
	}
	int max_depth;
	double total = place(&t, &l, &max_depth);
	int height = TOP + (max_depth + 1) * FRAME_H + BOTTOM + (max_depth < 0 ? FRAME_H : 0);
	const char *command = rtl_profile_get_meta(p, "command");

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n"
		"<style>text{font:12px Verdana,sans-serif;fill:#000;pointer-events:none}"
		"g.f{cursor:pointer}g.f:hover rect{stroke:#000;stroke-width:0.5}"
		"#title{font-size:17px;cursor:pointer}.sub{font-size:12px;fill:#555}</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"pointer-events:auto\">",
		WIDTH, height, WIDTH, height, WIDTH / 2);
	xml_text(out, command ? command : "flame graph", 90);
	fprintf(out, "</text>\n<text class=\"sub\" x=\"%d\" y=\"42\" text-anchor=\"middle\">reticle calltime: "
		"exclusive time per call path, %.6g s in all, threads merged; click a frame to zoom, the title "
		"to zoom out</text>\n", WIDTH / 2, total);
	if (max_depth < 0)
		fprintf(out, "<text x=\"%d\" y=\"%d\">no time measured</text>\n", PAD, TOP + FRAME_H - 4);
	for (size_t i = 0; i < t.count; i++)
		if (l.depth[i] >= 0)
			frame(out, &t, &l, i, total, height);
	fprintf(out, script, WIDTH, PAD, CHAR_W);
	fputs("</svg>\n", out);
	err = rpt_out_status(out);
out:
	free(l.width);
	free(l.x);
	free(l.next);
	free(l.depth);
	cct_free(&t);
	return err;
}
