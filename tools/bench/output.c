/* The JSON and CSV files: every row with its shape, kernel, time, TFLOPS, KV bytes/s, check, and the
 * peak it is judged by. Numbers a row lacks are null (JSON) or an empty field (CSV). */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "problem.h"

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x) /* JSON has no NaN/inf: null */
{
    if (isfinite(x)) fprintf(f, "%.10g", x);
    else fputs("null", f);
}

/* The numbers of one row that may be absent: NAN, written as null (JSON) or an empty field (CSV). */
typedef struct row_nums { double ms, us, tflops, kv_Bps, peak_value, peak_fraction; } row_nums;

static row_nums nums_of(const row *r)
{
    int ran = r->ms >= 0;
    row_nums n = {ran ? r->ms : NAN, ran ? r->ms * 1e3 : NAN, ran ? r->tflops : NAN,
                  ran && r->decode ? r->kv_Bps : NAN, r->peak ? r->peak->value : NAN,
                  ran && r->peak ? r->peak_fraction : NAN};
    return n;
}

#define JS(key, val) (fprintf(f, ",\"%s\":", key), json_str(f, val))
#define JN(key, val) (fprintf(f, ",\"%s\":", key), json_num(f, val))

/* The run's record: tool, version, device, command line and timing protocol. */
static void json_run(FILE *f, const run_info *ri)
{
    int v = portattn_version();
    fprintf(f, "{\"tool\":\"portattn-bench\",\"format\":2,\"version\":\"%d.%d.%d\"", v / 10000, v / 100 % 100, v % 100);
    JS("device", ri->device);
    JS("device_entry", ri->entry);
    JS("devices_file", ri->table);
    JS("sweep", ri->sweep);
    JS("date", ri->date);
    JS("command", ri->command);
    JN("launch_floor_us", ri->launch_floor_us >= 0 ? ri->launch_floor_us : NAN);
    const opts *o = ri->o;
    fprintf(f, ",\"protocol\":{\"timing\":\"%s\",\"statistic\":\"median\",\"inputs\":\"%s\"", ri->timing,
            o->normal ? "normal" : "uniform");
    const dm_protocol *pr = &o->protocol;
    if (!strcmp(ri->timing, "do_bench"))
        fprintf(f, ",\"warmup_ms\":%g,\"rep_ms\":%g,\"flush_mib\":%d", pr->warmup_ms, pr->rep_ms, DM_FLUSH_MIB);
    else
        fprintf(f, ",\"warmup\":%d,\"reps\":%d%s", pr->warmup, pr->reps,
                !strcmp(ri->timing, "burst") ? ",\"flush_mib\":" DM_STR(DM_FLUSH_MIB) : "");
    fputc('}', f);
}

/* One row's object (after its separator). */
static void json_row(FILE *f, const run_info *ri, const row *r)
{
    const shape *s = &r->s;
    row_nums x = nums_of(r);
    char fl[160];
    shape_flags(s, fl, sizeof fl);
    fprintf(f, "{\"mode\":\"%s\",\"dtype\":\"%s\"", r->decode ? "decode" : "prefill",
            pa_dtype_name(s->dtype));
    JS("backend", r->backend);
    JS("kernel", r->kernel);
    fprintf(f, ",\"batch\":%lld,\"seqlen_q\":%lld,\"seqlen_k\":%lld,\"tokens_q\":%lld,\"tokens_k\":%lld,"
               "\"heads_q\":%lld,\"heads_kv\":%lld,\"head_dim_qk\":%lld,\"head_dim_v\":%lld,\"causal\":%s,"
               "\"window_left\":%lld,\"window_right\":%lld,\"softcap\":%g,\"varlen\":%s,\"lse\":%s,\"layout\":\"%s\","
               "\"page_size\":%lld",
            (long long)s->b, (long long)s->sq, (long long)s->sk, (long long)r->tokens_q, (long long)r->tokens_k,
            (long long)s->hq, (long long)s->hkv, (long long)s->d, (long long)s->dv, s->causal ? "true" : "false",
            (long long)s->wl, (long long)s->wr, s->softcap, s->varlen ? "true" : "false",
            s->lse ? "true" : "false", s->bhsd ? "bhsd" : "bshd", (long long)s->page);
    JS("flags", fl);
    JN("time_ms", x.ms); /* null when the row did not run */
    JN("time_us", x.us);
    JN("host_us_per_call", r->host_us >= 0 ? r->host_us : NAN);
    if (x.ms == x.ms) {
        JN("time_ms_p20", r->timing.p20_ms);
        JN("time_ms_p80", r->timing.p80_ms);
        fprintf(f, ",\"timed_calls\":%d", r->timing.reps);
        JS("timing", ri->timing);
    }
    JN("flops", r->flops);
    JN("tflops", x.tflops);
    JN("kv_bytes", r->kv_bytes);
    JN("kv_bytes_per_s", x.kv_Bps); /* decode rows */
    fprintf(f, ",\"kv_copies\":%d", r->kv_copies);
    JS("peak_name", r->peak_metric);
    JN("peak_value", x.peak_value);
    JS("peak_unit", r->decode ? "TB/s" : "TFLOPS");
    JS("peak_kind", r->peak ? r->peak->kind : "");
    JS("peak_date", r->peak ? r->peak->date : "");
    JS("peak_source", r->peak ? r->peak->source : "");
    JN("peak_fraction", x.peak_fraction);
    JS("peak_note", r->peak_note);
    JS("check", r->check);
    if (r->check_ref[0]) { /* something was compared */
        JS("check_ref", r->check_ref);
        JN("o_max_abs", r->o_maxabs);
        JN("o_rel_l2", r->o_rel);
        if (s->lse) { JN("lse_max_abs", r->lse_maxabs); JN("lse_rel_l2", r->lse_rel); }
    }
    if (r->msg[0]) JS("message", r->msg);
    fputc('}', f);
}

int write_json(const char *path, const run_info *ri, const row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    json_run(f, ri);
    fputs(",\"rows\":[", f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_row(f, ri, &rows[i]);
    }
    fputs("\n]}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}
#undef JS
#undef JN

static void csv_str(FILE *f, const char *s) /* RFC 4180: quoted when it holds , " or a line break */
{
    if (!strpbrk(s, ",\"\r\n")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double x)
{
    if (isfinite(x)) fprintf(f, "%.10g", x);
}

int write_csv(const char *path, const run_info *ri, const row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("device,device_entry,sweep,mode,backend,kernel,dtype,batch,seqlen_q,seqlen_k,tokens_q,tokens_k,heads_q,"
          "heads_kv,head_dim_qk,head_dim_v,causal,window_left,window_right,softcap,varlen,lse,layout,page_size,flags,"
          "time_ms,time_us,flops,tflops,kv_bytes,kv_bytes_per_s,kv_copies,peak_name,peak_value,peak_unit,peak_kind,"
          "peak_date,peak_source,peak_fraction,peak_note,check,check_ref,o_max_abs,o_rel_l2,lse_max_abs,lse_rel_l2,"
          "message\n", f);
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        const shape *s = &r->s;
        row_nums x = nums_of(r);
        char fl[160];
        shape_flags(s, fl, sizeof fl);
#define S(val) (csv_str(f, val), fputc(',', f))
#define N(val) (csv_num(f, val), fputc(',', f))
        S(ri->device); S(ri->entry); S(ri->sweep); S(r->decode ? "decode" : "prefill"); S(r->backend);
        S(r->kernel); S(pa_dtype_name(s->dtype));
        fprintf(f, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%lld,%lld,%g,%d,%d,%s,%lld,", (long long)s->b,
                (long long)s->sq, (long long)s->sk, (long long)r->tokens_q, (long long)r->tokens_k, (long long)s->hq,
                (long long)s->hkv, (long long)s->d, (long long)s->dv, s->causal, (long long)s->wl, (long long)s->wr,
                s->softcap, s->varlen, s->lse, s->bhsd ? "bhsd" : "bshd", (long long)s->page);
        S(fl);
        N(x.ms); N(x.us); N(r->flops); N(x.tflops); N(r->kv_bytes); N(x.kv_Bps);
        fprintf(f, "%d,", r->kv_copies);
        S(r->peak_metric); N(x.peak_value); S(r->decode ? "TB/s" : "TFLOPS");
        S(r->peak ? r->peak->kind : ""); S(r->peak ? r->peak->date : ""); S(r->peak ? r->peak->source : "");
        N(x.peak_fraction); S(r->peak_note); S(r->check); S(r->check_ref);
        if (r->check_ref[0]) { N(r->o_maxabs); N(r->o_rel); } else fputs(",,", f);
        if (r->check_ref[0] && s->lse) { N(r->lse_maxabs); N(r->lse_rel); } else fputs(",,", f);
        csv_str(f, r->msg);
        fputc('\n', f);
#undef S
#undef N
    }
    return fclose(f) == 0 ? 0 : -1;
}
