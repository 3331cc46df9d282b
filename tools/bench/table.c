/* What goes to the terminal: the progress line of a sweep on stderr, the table of rows and the
 * host-cost summary on stdout. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "problem.h"

/* The progress line of a sweep on stderr: rewritten in place on a terminal, one line a row when
 * stderr is a file or pipe (a log then shows how far a sweep got). */
static struct { int on, tty, shown; double t0; } progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "causal window(L,R) softcap=X varlen lse bhsd page_size=P": what is not plain in a shape. */
void shape_flags(const shape *s, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
#define ADD(...) (k += (size_t)snprintf(buf + k, k < n ? n - k : 0, __VA_ARGS__), k = k < n ? k : n - 1)
    if (s->causal) ADD(" causal");
    if (s->wl >= 0 || s->wr >= 0) ADD(" window(%lld,%lld)", (long long)s->wl, (long long)s->wr);
    if (s->softcap > 0) ADD(" softcap=%g", s->softcap);
    if (s->varlen) ADD(" varlen");
    for (int i = 0; i < s->nserve; i++)
        ADD("%s%lldx%lld", i ? "," : " serve=", (long long)s->serve_n[i], (long long)s->serve_q[i]);
    if (s->lse) ADD(" lse");
    if (s->bhsd) ADD(" bhsd");
    if (s->page > 0) ADD(" page_size=%lld", (long long)s->page);
#undef ADD
    if (buf[0] == ' ') memmove(buf, buf + 1, strlen(buf));
}

void progress_start(int on)
{
    progress.on = on;
    progress.tty = isatty(fileno(stderr));
    progress.t0 = now_s();
}

void progress_show(int i, int n, const shape *s)
{
    if (!progress.on) return;
    char fl[160];
    shape_flags(s, fl, sizeof fl);
    fprintf(stderr, "%s[%d/%d] %s B=%lld Sq=%lld Sk=%lld Hq=%lld Hkv=%lld D=%lld%s%s  (%.1f s elapsed)%s",
            progress.tty ? "\r\033[K" : "", i + 1, n, pa_dtype_name(s->dtype), (long long)s->b, (long long)s->sq,
            (long long)s->sk, (long long)s->hq, (long long)s->hkv, (long long)s->d, fl[0] ? " " : "", fl,
            now_s() - progress.t0, progress.tty ? "" : "\n");
    fflush(stderr);
    progress.shown = progress.tty;
}

static void progress_clear(void) /* before anything goes to stdout, which may be the same terminal */
{
    if (progress.shown) { fputs("\r\033[K", stderr); fflush(stderr); }
    progress.shown = 0;
}

void progress_end(int n, int nfailed)
{
    progress_clear();
    if (progress.on) fprintf(stderr, "portattn-bench: %d rows in %.1f s, %d failed\n", n, now_s() - progress.t0, nfailed);
}

void print_header(void)
{
    printf("%-13s %-24s %-4s %4s %6s %6s %4s %4s %4s %4s %12s %8s %8s %6s  flags\n", "backend", "kernel", "type",
           "B", "Sq", "Sk", "Hq", "Hkv", "D", "Dv", "time", "TFLOPS", "KV TB/s", "%peak");
}

void print_row(const row *r)
{
    const shape *s = &r->s;
    char fl[160];
    progress_clear();
    printf("%-13s %-24s %-4s %4lld %6lld %6lld %4lld %4lld %4lld %4lld ", r->backend, r->kernel, pa_dtype_name(s->dtype),
           (long long)s->b, (long long)s->sq, (long long)s->sk, (long long)s->hq, (long long)s->hkv,
           (long long)s->d, (long long)s->dv);
    if (r->ms < 0) printf("%12s %8s %8s %6s ", "-", "-", "-", "-");
    else {
        if (r->decode) printf("%9.1f us ", r->ms * 1e3);
        else printf("%9.3f ms ", r->ms);
        printf("%8.2f ", r->tflops);
        if (r->decode) printf("%8.3f ", r->kv_Bps * 1e-12);
        else printf("%8s ", "-");
        if (r->peak) printf(r->peak_fraction < 0.0995 ? "%5.2f%% " : "%5.1f%% ", 100 * r->peak_fraction);
        else printf("%6s ", "-");
    }
    shape_flags(s, fl, sizeof fl);
    printf(" %s", fl);
    if (s->varlen || s->nserve) printf(" (tokens q=%lld k=%lld)", (long long)r->tokens_q, (long long)r->tokens_k);
    printf("\n");
    fflush(stdout);
}
static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The API's host cost over the rows that ran on a GPU: the median and the largest, and the floor. */
void print_host_cost(const row *rows, int n, double launch_floor_us)
{
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; h && i < n; i++)
        if (rows[i].ms >= 0 && rows[i].host_us >= 0) h[m++] = rows[i].host_us;
    if (m) {
        qsort(h, (size_t)m, sizeof(double), cmp_f64);
        printf("# host time inside portattn_forward: median %.2f us, max %.2f us per call over %d rows\n",
               m % 2 ? h[m / 2] : 0.5 * (h[m / 2 - 1] + h[m / 2]), h[m - 1], m);
        if (launch_floor_us >= 0)
            printf("# one empty-kernel launch (cudaLaunchKernel, this process, this run): %.2f us per call; "
                   "the call's own cost is the difference\n", launch_floor_us);
    }
    free(h);
}
