/* SPDX-License-Identifier: MIT */
/*
 * test_orthanc_options.c: the Orthanc plugin's argument parsing (plugin/orthanc/options.c) on
 * its own, without Orthanc, so that the sanitizer build checks the code that reads untrusted
 * query strings and JSON bodies: every member accepted with its meaning, every wrong name, type
 * and bound refused naming the argument, and the UID key the same exactly when the pixels
 * would be. MIT like every test (README, License); the program it builds links the plugin's
 * GPL-3.0-or-later code and is under the GPL as a whole.
 */
#include <math.h>
#include <string.h>

#include "options.h"
#include "test_support.h"

/* A GET request with the given query arguments. */
typedef struct query {
    const char *keys[8], *values[8];
    OrthancPluginHttpRequest request;
} query;

static const OrthancPluginHttpRequest *make_query(query *q, int n, const char *const *kv)
{
    memset(q, 0, sizeof *q);
    for (int i = 0; i < n; i++) {
        q->keys[i] = kv[2 * i];
        q->values[i] = kv[2 * i + 1];
    }
    q->request.method = OrthancPluginHttpMethod_Get;
    q->request.getCount = (uint32_t)n;
    q->request.getKeys = q->keys;
    q->request.getValues = q->values;
    return &q->request;
}

START_TEST(histogram_query)
{
    query q;
    dh_hist_params p;
    dho_bad_argument bad;
    const char *good[] = {"bins", "100", "range", "-1024:3072", "units", "modality",
                          "per-slice", "true", "device", "CPU"};
    ck_assert_int_eq(dho_parse_hist_query(make_query(&q, 5, good), &p, &bad), 0);
    ck_assert_uint_eq(p.bins, 100);
    ck_assert(p.has_range && p.lo == -1024 && p.hi == 3072);
    ck_assert_int_eq(p.units, DH_UNITS_MODALITY);
    ck_assert_int_eq(p.per_slice, 1);
    ck_assert_int_eq(p.device, DH_DEVICE_CPU);
    ck_assert_int_eq(dho_parse_hist_query(make_query(&q, 0, good), &p, &bad), 0);
    ck_assert(p.bins == 0 && !p.has_range && p.units == DH_UNITS_STORED && !p.per_slice);

    static const char *const bad_args[][2] = {
        {"bins", "0"},       {"bins", "65537"},  {"bins", "-1"},     {"bins", "1e3"},
        {"bins", ""},        {"range", "5:1"},   {"range", "1:1"},   {"range", "a:b"},
        {"range", "1:2:3"},  {"range", "nan:1"}, {"units", "HU"},    {"per-slice", "yes"},
        {"device", "gpu"},   {"colour", "red"},
    };
    for (size_t i = 0; i < sizeof bad_args / sizeof bad_args[0]; i++) {
        ck_assert_msg(dho_parse_hist_query(make_query(&q, 1, bad_args[i]), &p, &bad) == -1,
                      "%s=%s accepted", bad_args[i][0], bad_args[i][1]);
        ck_assert_str_eq(bad.name, bad_args[i][0]);
        ck_assert(bad.reason[0] != '\0');
    }
}
END_TEST

/* Parses a JSON text as an equalize (op) body; returns the parser's result. */
static int derive(const char *text, dh_eq_operation op, dh_equalize_params *p, int *async,
                  char *key, dho_bad_argument *bad)
{
    json_error_t err;
    json_t *body = text ? json_loads(text, 0, &err) : NULL;
    ck_assert_msg(!text || body, "test JSON does not parse: %s", text);
    int gsps = 0;
    int rc = dho_parse_derive_body(body, op, p, async, &gsps, key, 512, bad);
    json_decref(body);
    return rc;
}

/* A derive body that must be refused, by the member it must name. */
typedef struct refused_body {
    const char *body;
    dh_eq_operation op;
    const char *name;
} refused_body;

static void check_refused(const refused_body *refused, size_t n)
{
    dh_equalize_params p;
    dho_bad_argument bad;
    char key[512];
    int async;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(derive(refused[i].body, refused[i].op, &p, &async, key, &bad) == -1,
                      "%s accepted", refused[i].body);
        ck_assert_msg(strcmp(bad.name, refused[i].name) == 0, "%s: named %s, not %s",
                      refused[i].body, bad.name, refused[i].name);
        ck_assert(bad.reason[0] != '\0');
    }
}

START_TEST(derive_body)
{
    dh_equalize_params p;
    dho_bad_argument bad;
    char key[512], key2[512];
    int async;
    ck_assert_int_eq(derive(NULL, DH_EQ_EQUALIZE, &p, &async, key, &bad), 0);
    ck_assert(p.operation == DH_EQ_EQUALIZE && p.window == DH_WINDOW_NONE && !async);
    ck_assert_int_eq(derive("{\"Mode\": \"slice\", \"Window\": \"percentile:1.5\", "
                            "\"ClipLimit\": 3, \"Bits\": 12, \"Device\": \"cpu\", "
                            "\"Asynchronous\": true}",
                            DH_EQ_EQUALIZE, &p, &async, key, &bad), 0);
    ck_assert(p.per_slice && p.window == DH_WINDOW_PERCENTILE && p.percentile == 1.5);
    ck_assert(p.clip_limit == 3 && p.output_bits == 12 && p.device == DH_DEVICE_CPU && async);
    /* The device does not change the pixels, so not the key; any other parameter does. */
    ck_assert_int_eq(derive("{\"Mode\": \"slice\", \"Window\": \"percentile:1.5\", "
                            "\"ClipLimit\": 3, \"Bits\": 12, \"Device\": \"auto\"}",
                            DH_EQ_EQUALIZE, &p, &async, key2, &bad), 0);
    ck_assert_str_eq(key, key2);
    ck_assert_int_eq(derive("{\"Mode\": \"slice\", \"Window\": \"percentile:1.5\", "
                            "\"ClipLimit\": 3.5, \"Bits\": 12}",
                            DH_EQ_EQUALIZE, &p, &async, key2, &bad), 0);
    ck_assert_str_ne(key, key2);
    ck_assert_int_eq(derive("{\"Window\": \"40:400\"}", DH_EQ_WINDOW_LEVEL, &p, &async, key,
                            &bad), 0);
    ck_assert(p.window == DH_WINDOW_CENTER_WIDTH && p.center == 40 && p.width == 400);
    ck_assert_int_eq(derive("{\"Window\": \"40:400\", \"Function\": \"sigmoid\"}",
                            DH_EQ_WINDOW_LEVEL, &p, &async, key2, &bad), 0);
    ck_assert_str_ne(key, key2);
    ck_assert_int_eq(derive("{\"WindowRange\": \"-200:300\"}", DH_EQ_EQUALIZE, &p, &async, key,
                            &bad), 0);
    ck_assert(p.window == DH_WINDOW_RANGE && p.lo == -200 && p.hi == 300);

    static const refused_body refused[] = {
        {"[1, 2]", DH_EQ_EQUALIZE, "body"},
        {"{\"Mode\": \"volumes\"}", DH_EQ_EQUALIZE, "Mode"},
        {"{\"Mode\": 1}", DH_EQ_EQUALIZE, "Mode"},
        {"{\"Window\": \"percentile:50\"}", DH_EQ_EQUALIZE, "Window"},
        {"{\"Window\": \"40:0\"}", DH_EQ_EQUALIZE, "Window"},
        {"{\"Window\": \"wide\"}", DH_EQ_EQUALIZE, "Window"},
        {"{\"Window\": \"minmax\", \"WindowRange\": \"1:2\"}", DH_EQ_EQUALIZE, "Window"},
        {"{\"WindowRange\": \"2:1\"}", DH_EQ_EQUALIZE, "WindowRange"},
        {"{\"ClipLimit\": 0}", DH_EQ_EQUALIZE, "ClipLimit"},
        {"{\"ClipLimit\": \"3\"}", DH_EQ_EQUALIZE, "ClipLimit"},
        {"{\"ClipLimit\": 3, \"Window\": \"1:2\"}", DH_EQ_WINDOW_LEVEL, "ClipLimit"},
        {"{\"Function\": \"linear\", \"Window\": \"1:2\"}", DH_EQ_EQUALIZE, "Function"},
        {"{\"Function\": \"cubic\", \"Window\": \"1:2\"}", DH_EQ_WINDOW_LEVEL, "Function"},
        {"{\"Bits\": 10}", DH_EQ_EQUALIZE, "Bits"},
        {"{\"Bits\": 12.5}", DH_EQ_EQUALIZE, "Bits"},
        {"{\"Device\": \"gpu\"}", DH_EQ_EQUALIZE, "Device"},
        {"{\"Asynchronous\": 1}", DH_EQ_EQUALIZE, "Asynchronous"},
        {"{\"Output\": \"png\"}", DH_EQ_EQUALIZE, "Output"},
        {"{\"Output\": true}", DH_EQ_EQUALIZE, "Output"},
        {"{\"Windw\": \"minmax\"}", DH_EQ_EQUALIZE, "Windw"},
        {"{}", DH_EQ_WINDOW_LEVEL, "Window"},
    };
    check_refused(refused, sizeof refused / sizeof refused[0]);
}
END_TEST

/* CLAHE in the derive body (issue 21): Method, Tiles, TileSize and Bins, in the key; refused
 * where they make no sense. */
START_TEST(derive_body_clahe)
{
    dh_equalize_params p;
    dho_bad_argument bad;
    char key[512], key2[512], global[512];
    int async;
    ck_assert_int_eq(derive("{\"ClipLimit\": 2}", DH_EQ_EQUALIZE, &p, &async, global, &bad), 0);
    ck_assert_int_eq(p.method, DH_EQ_METHOD_GLOBAL);
    ck_assert_int_eq(derive("{\"Method\": \"clahe\", \"ClipLimit\": 2, \"Tiles\": \"8x6x2\", "
                            "\"Bins\": 4096}",
                            DH_EQ_EQUALIZE, &p, &async, key, &bad), 0);
    ck_assert(p.method == DH_EQ_METHOD_CLAHE && p.tiles[0] == 8 && p.tiles[1] == 6 &&
              p.tiles[2] == 2 && p.bins == 4096 && !p.per_slice);
    ck_assert_str_ne(key, global);
    ck_assert_int_eq(derive("{\"Method\": \"clahe\", \"ClipLimit\": 2, \"Tiles\": \"8x6x3\", "
                            "\"Bins\": 4096}",
                            DH_EQ_EQUALIZE, &p, &async, key2, &bad), 0);
    ck_assert_str_ne(key, key2);
    /* One TileSize: columns and rows per slice, the slices too per volume. */
    ck_assert_int_eq(derive("{\"TileSize\": \"64\", \"Method\": \"clahe\", \"Mode\": \"slice\"}",
                            DH_EQ_EQUALIZE, &p, &async, key, &bad), 0);
    ck_assert(p.tile_size[0] == 64 && p.tile_size[1] == 64 && p.tile_size[2] == 0);
    ck_assert_int_eq(derive("{\"Method\": \"clahe\", \"TileSize\": \"64\"}", DH_EQ_EQUALIZE, &p,
                            &async, key, &bad), 0);
    ck_assert(p.tile_size[2] == 64);
    static const refused_body refused[] = {
        {"{\"Method\": \"kmeans\"}", DH_EQ_EQUALIZE, "Method"},
        {"{\"Method\": \"clahe\", \"Window\": \"1:2\"}", DH_EQ_WINDOW_LEVEL, "Method"},
        {"{\"Tiles\": \"8x8\"}", DH_EQ_EQUALIZE, "Tiles"},
        {"{\"Bins\": 256}", DH_EQ_EQUALIZE, "Bins"},
        {"{\"Method\": \"clahe\", \"Tiles\": \"8\"}", DH_EQ_EQUALIZE, "Tiles"},
        {"{\"Method\": \"clahe\", \"Tiles\": \"8x0\"}", DH_EQ_EQUALIZE, "Tiles"},
        {"{\"Method\": \"clahe\", \"Tiles\": 8}", DH_EQ_EQUALIZE, "Tiles"},
        {"{\"Method\": \"clahe\", \"Tiles\": \"8x8\", \"TileSize\": \"4\"}", DH_EQ_EQUALIZE,
         "TileSize"},
        {"{\"Method\": \"clahe\", \"Bins\": 65537}", DH_EQ_EQUALIZE, "Bins"},
        {"{\"Method\": \"clahe\", \"Bins\": 2.5}", DH_EQ_EQUALIZE, "Bins"},
        {"{\"Method\": \"clahe\", \"Mode\": \"slice\", \"Tiles\": \"4x4x2\"}", DH_EQ_EQUALIZE,
         "Tiles"},
    };
    check_refused(refused, sizeof refused / sizeof refused[0]);
}
END_TEST

static int mi(const char *text, dh_mi_params *p, const char **fixed, const json_t **moving,
              dho_bad_argument *bad, json_t **body)
{
    json_error_t err;
    *body = json_loads(text, 0, &err);
    ck_assert_msg(*body != NULL, "test JSON does not parse: %s", text);
    return dho_parse_mi_body(*body, p, fixed, moving, bad);
}

/* "Output": "gsps" asks for a presentation state, another result with other UIDs: its key
 * differs from the derived series' of the same parameters; "series" is the default. */
START_TEST(derive_output_kind)
{
    dh_equalize_params p;
    dho_bad_argument bad;
    char key[512], key_series[512], key_gsps[512];
    int async, gsps = -1;
    json_t *body = json_loads("{\"Window\": \"40:400\", \"Output\": \"gsps\"}", 0, NULL);
    ck_assert_int_eq(dho_parse_derive_body(body, DH_EQ_WINDOW_LEVEL, &p, &async, &gsps, key_gsps,
                                           sizeof key_gsps, &bad), 0);
    ck_assert_int_eq(gsps, 1);
    json_decref(body);
    body = json_loads("{\"Window\": \"40:400\", \"Output\": \"Series\"}", 0, NULL);
    ck_assert_int_eq(dho_parse_derive_body(body, DH_EQ_WINDOW_LEVEL, &p, &async, &gsps,
                                           key_series, sizeof key_series, &bad), 0);
    ck_assert_int_eq(gsps, 0);
    json_decref(body);
    ck_assert_int_eq(derive("{\"Window\": \"40:400\"}", DH_EQ_WINDOW_LEVEL, &p, &async, key,
                            &bad), 0);
    ck_assert_str_eq(key, key_series);
    ck_assert_str_ne(key, key_gsps);
}
END_TEST

START_TEST(mi_body)
{
    dh_mi_params p;
    dho_bad_argument bad;
    const char *fixed;
    const json_t *moving;
    json_t *body;
    ck_assert_int_eq(mi("{\"Fixed\": \"a\", \"Moving\": [\"b\", \"c\"], \"Bins\": [16, 24], "
                        "\"RangeFixed\": \"-10:4095\", \"RangeMoving\": \"0:99\", "
                        "\"Log2\": true, \"Device\": \"cpu\"}",
                        &p, &fixed, &moving, &bad, &body), 0);
    ck_assert_str_eq(fixed, "a");
    ck_assert_uint_eq(json_array_size(moving), 2);
    ck_assert(p.bins_fixed == 16 && p.bins_moving == 24 && p.log2 && p.device == DH_DEVICE_CPU);
    ck_assert(p.has_range_fixed && p.fixed_lo == -10 && p.fixed_hi == 4095);
    ck_assert(p.has_range_moving && p.moving_lo == 0 && p.moving_hi == 99);
    json_decref(body);
    ck_assert_int_eq(mi("{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"Bins\": 32}", &p, &fixed,
                        &moving, &bad, &body), 0);
    ck_assert(p.bins_fixed == 32 && p.bins_moving == 32 && !p.has_range_fixed && !p.log2);
    json_decref(body);

    static const struct {
        const char *body, *name;
    } refused[] = {
        {"[]", "body"},
        {"{\"Moving\": [\"b\"]}", "Fixed"},
        {"{\"Fixed\": \"a\"}", "Moving"},
        {"{\"Fixed\": 7, \"Moving\": [\"b\"]}", "Fixed"},
        {"{\"Fixed\": \"a\", \"Moving\": []}", "Moving"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\", 3]}", "Moving"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"Bins\": 1}", "Bins"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"Bins\": [16]}", "Bins"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"Bins\": [16, 300]}", "Bins"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"RangeFixed\": \"0.5:9\"}", "RangeFixed"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"RangeMoving\": \"0:70000\"}", "RangeMoving"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"Log2\": \"yes\"}", "Log2"},
        {"{\"Fixed\": \"a\", \"Moving\": [\"b\"], \"Mask\": \"c\"}", "Mask"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ck_assert_msg(mi(refused[i].body, &p, &fixed, &moving, &bad, &body) == -1,
                      "%s accepted", refused[i].body);
        ck_assert_msg(strcmp(bad.name, refused[i].name) == 0, "%s: named %s, not %s",
                      refused[i].body, bad.name, refused[i].name);
        json_decref(body);
    }
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(histogram_query), DH_TEST(derive_body),
                             DH_TEST(derive_output_kind), DH_TEST(derive_body_clahe),
                             DH_TEST(mi_body)};
    return dh_test_run(dh_test_suite("orthanc_options", 0, DH_TESTS(tests)));
}
