/* Typed configuration from YAML files and dotted `key=value` overrides, driven by a schema table.
 *
 * A schema is an array of rows (dotted key, type, byte offset into a plain C struct, default as
 * text, inclusive numeric range, allowed choices, help). Every value — defaults, YAML scalars,
 * command-line overrides — goes through the same text parser, so a saved config reads back to
 * the same bits. Errors name the source ("configs/x.yaml:12" or "command line"), the dotted key
 * and the reason, with a "did you mean" for misspelled keys.
 *
 * YAML files are nested mappings whose leaf paths are the dotted keys; a file may also use dotted
 * keys directly (`sys2.offline.beta: 3`). A top-level `base: other.yaml` (path relative to the
 * file) loads another config first; the file's own keys then override it. */
#ifndef M2_CONFIG_H
#define M2_CONFIG_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/err.h"

#define M2_CFG_STR_MAX 512   /* storage of STR and LIST fields, NUL included */

typedef enum m2_cfg_type {
    M2_CFG_INT,     /* int64_t */
    M2_CFG_FLOAT,   /* double */
    M2_CFG_BOOL,    /* int, 0 or 1; YAML true/false/yes/no/on/off/1/0 */
    M2_CFG_STR,     /* char[M2_CFG_STR_MAX] */
    M2_CFG_ENUM,    /* int: the index of the value among `choices` ("a|b|c"), so a caller's C enum
                       listed in the same order compares values instead of strings */
    M2_CFG_LIST     /* char[M2_CFG_STR_MAX], comma-joined items; YAML sequence or "a,b";
                       each item one of `choices` when choices is set */
} m2_cfg_type;

typedef struct m2_cfg_field {
    const char *key;       /* dotted, e.g. "sys2.offline.beta" */
    m2_cfg_type type;
    size_t offset;         /* offsetof(the config struct, field) */
    const char *def;       /* default, as text */
    double min, max;       /* INT/FLOAT range, inclusive; min > max means unbounded */
    const char *choices;   /* ENUM/LIST: "a|b|c"; NULL otherwise (or any item for LIST) */
    const char *help;
} m2_cfg_field;

typedef struct m2_cfg_schema {
    const m2_cfg_field *fields;
    int n_fields;
    size_t struct_size;
} m2_cfg_schema;

/* Fills every field with its default. Fails only if a default itself is invalid (a schema bug). */
int m2_cfg_defaults(const m2_cfg_schema *s, void *cfg, m2_err *err);

/* Sets one key from text. `source` names where the value came from, for the error message. */
int m2_cfg_set(const m2_cfg_schema *s, void *cfg, const char *key, const char *value,
               const char *source, m2_err *err);
/* Applies "dotted.key=value" (the source is "command line"). */
int m2_cfg_override(const m2_cfg_schema *s, void *cfg, const char *assignment, m2_err *err);

/* Applies a YAML document (text of length len); `source` is the file name used in messages and
 * the directory `base:` paths are resolved against (NULL: "<string>", base relative to cwd). */
int m2_cfg_apply_yaml(const m2_cfg_schema *s, void *cfg, const char *text, size_t len,
                      const char *source, m2_err *err);
/* Reads and applies a YAML file (following `base:`, at most 16 levels, cycles rejected). */
int m2_cfg_apply_file(const m2_cfg_schema *s, void *cfg, const char *path, m2_err *err);

/* The whole config as nested YAML (every key, defaults included), malloc'd. Reading it back with
 * m2_cfg_apply_yaml gives an identical struct. */
char *m2_cfg_to_yaml(const m2_cfg_schema *s, const void *cfg);
int m2_cfg_save(const m2_cfg_schema *s, const void *cfg, const char *path, m2_err *err);
/* One value as text (the form m2_cfg_set reads back); returns buf. */
const char *m2_cfg_format_value(const m2_cfg_field *f, const void *cfg, char *buf, size_t cap);

/* Lookup by dotted key; NULL if absent. */
const m2_cfg_field *m2_cfg_find(const m2_cfg_schema *s, const char *key);
/* The known key closest to `key` by edit distance, or NULL when none is close. */
const char *m2_cfg_suggest(const m2_cfg_schema *s, const char *key);

/* Schema as a table: key, type, default, range/choices, help (`--help-config`). */
void m2_cfg_print_schema(const m2_cfg_schema *s, FILE *f);

/* LIST helpers: number of items, and item i copied into buf (returns buf, or NULL past the end). */
int m2_cfg_list_count(const char *list);
const char *m2_cfg_list_item(const char *list, int i, char *buf, size_t cap);
int m2_cfg_list_has(const char *list, const char *item);

#endif
