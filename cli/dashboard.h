/*  dashboard — the web page `pixflow monitor --http` serves at / (docs/dashboard.md): the
    static files of web/ embedded in the binary at build time (cmake/embed_web.cmake), and the
    job's snapshot rendered as HTML in C, so the page shows the job at load without JavaScript
    (a CLI check of its DOM, curl | grep) and app.js swaps in fresh renderings of the same
    function (GET /api/snapshot) as events come. Pure functions: no I/O, no locks.
*/
#ifndef PF_DASHBOARD_H
#define PF_DASHBOARD_H
#include <stddef.h>

/* One embedded file of web/ (name relative to web/, e.g. "app.js", "vendor/uPlot.min.css"). */
typedef struct {
    const char *name;
    const unsigned char *data;
    size_t len;
} pf_web_asset;

/* The embedded file called `name`, or NULL. */
const pf_web_asset *pf_web_asset_find(const char *name);

/* Content-Type for a file name by its extension (.html .js .css .png .jpg/.jpeg .json .txt
   .log .svg); NULL for any other, which the server does not serve. */
const char *pf_web_content_type(const char *name);

/* The snapshot as an HTML fragment from GET /api/state's JSON (docs/protocol.md): job line,
   progress and ETA, loaders, workers, hooks, checkpoint, evaluations beside bicubic, notes.
   Every string from the job is escaped. Elements carry ids and data- attributes the page's
   script and the tests read (id="pf-iter", tr data-name/data-alive, ...). Malformed JSON gives
   a fragment that says so. Returns a malloc'd string, NULL when out of memory. */
char *pf_dashboard_snapshot_html(const char *state_json);

/* index.html with its placeholders filled: the snapshot (as above), the page title from the
   model, `?token=T` on every URL the page loads when token is not NULL (a server bound off
   loopback), and the id of the last event the server holds (the page's event stream starts
   after it: the snapshot already shows what came before). Returns a malloc'd string, NULL
   when out of memory or index.html is missing. */
char *pf_dashboard_page(const char *state_json, const char *token,
                        unsigned long long last_event_id);
#endif
