/* The device table of portattn-bench (tools/devices.json): peak tensor TFLOPS and HBM bandwidth of
 * the GPUs users compare, each number labelled "measured" (with date and source) or "datasheet", so
 * that a benchmark row can say which fraction of which peak it reached. Not part of the library. */
#ifndef PORTATTN_BENCH_DEVICES_H
#define PORTATTN_BENCH_DEVICES_H

#include <stddef.h>

#define DT_MAX_DEVICES 32
#define DT_MAX_PEAKS 16
#define DT_MAX_MATCH 6

typedef struct dt_peak {
    char metric[24];  /* "bf16_tflops", "fp16_tflops", "hbm_TBps", ... */
    double value;     /* in TFLOPS or TB/s (10^12 per second) */
    char kind[12];    /* "measured" or "datasheet" */
    char date[16];    /* measured: when */
    char source[240]; /* where the number comes from */
} dt_peak;

typedef struct dt_device {
    char name[48];                           /* short name for reports, e.g. "H200" */
    char match[DT_MAX_MATCH][48], exclude[DT_MAX_MATCH][48];
    int nmatch, nexclude;
    dt_peak peaks[DT_MAX_PEAKS];
    int npeaks;
} dt_device;

typedef struct dt_table {
    dt_device dev[DT_MAX_DEVICES];
    int n;
    char path[1024]; /* the file it was read from */
} dt_table;

/* Finds the table: `explicit_path` if not NULL, else $PORTATTN_DEVICES, else devices.json next to
 * the executable, else <exe dir>/../share/portattn/devices.json (installed), else
 * PORTATTN_SOURCE_DIR/tools/devices.json when that macro is compiled in. Returns 0 and fills t, or
 * -1 with why (not found, or a parse error with its line) in err. */
int dt_load(const char *explicit_path, dt_table *t, char *err, size_t errlen);

/* The first device (file order) whose match substrings include one found in `device_name` and
 * whose exclude substrings include none, ignoring case; NULL for an unknown device. */
const dt_device *dt_match(const dt_table *t, const char *device_name);

/* The peak of `metric`: the measured one when prefer_measured and there is one, else the datasheet
 * one, else NULL. */
const dt_peak *dt_peak_of(const dt_device *d, const char *metric, int prefer_measured);

#endif
